/*
 * Metrics (daemon/metrics.c, core/hist.h): the histogram buckets and
 * quantile estimate on times the test chooses, the per-graph table's bound,
 * and a real gexecd whose STATS histograms must hold exactly the queue and
 * compute times its RUN replies reported, as gexec-submit prints them.
 */
#include <config.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

#include "daemon/metrics.h"
#include "core/hist.h"
#include "core/internal.h"
#include "core/json.h"
#include "core/wire.h"
#include <gexec/io.h>
#include "tests/testutil.h"

START_TEST(test_hist_buckets)
{
    for (size_t i = 1; i < GX_HIST_NBOUNDS; i++)
        ck_assert_int_lt(gx_hist_bounds_us[i - 1], gx_hist_bounds_us[i]);
    ck_assert_int_eq(gx_hist_bounds_us[0], 5);
    ck_assert_int_eq(gx_hist_bounds_us[GX_HIST_NBOUNDS - 1], 100000000);
    ck_assert_uint_eq(gx_hist_bucket(-3), 0);
    ck_assert_uint_eq(gx_hist_bucket(0), 0);
    ck_assert_uint_eq(gx_hist_bucket(5), 0); /* bounds are inclusive (le) */
    ck_assert_uint_eq(gx_hist_bucket(6), 1);
    ck_assert_uint_eq(gx_hist_bucket(10), 1);
    ck_assert_uint_eq(gx_hist_bucket(11), 2);
    ck_assert_uint_eq(gx_hist_bucket(700), gx_hist_bucket(501));
    ck_assert_uint_eq(gx_hist_bucket(701), gx_hist_bucket(1000));
    ck_assert_uint_eq(gx_hist_bucket(100000000), GX_HIST_NBOUNDS - 1);
    ck_assert_uint_eq(gx_hist_bucket(100000001), GX_HIST_NBOUNDS);
    for (size_t i = 0; i < GX_HIST_NBOUNDS; i++) { /* every bound lands in its own bucket */
        ck_assert_uint_eq(gx_hist_bucket(gx_hist_bounds_us[i]), i);
        ck_assert_uint_eq(gx_hist_bucket(gx_hist_bounds_us[i] + 1), i + 1);
    }
}
END_TEST

START_TEST(test_hist_quantile)
{
    uint64_t c[GX_HIST_NBUCKETS] = {0};
    ck_assert(gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, c, 0.5) < 0);
    /* 100 samples in (10, 15]: linear inside the bucket */
    c[gx_hist_bucket(12)] = 100;
    ck_assert_double_eq_tol(gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, c, 0.5), 12.5, 1e-9);
    ck_assert_double_eq_tol(gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, c, 1.0), 15, 1e-9);
    /* one sample above the last bound: the last bound */
    memset(c, 0, sizeof c);
    c[GX_HIST_NBOUNDS] = 1;
    ck_assert_double_eq(gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, c, 0.99), 1e8);
    /* 1..2000 us once each: every estimate lies in the bucket of the exact
     * quantile (nearest rank) */
    gxd_hist h = {0};
    for (int64_t us = 1; us <= 2000; us++)
        gxd_hist_add(&h, us);
    ck_assert_uint_eq(h.count, 2000);
    ck_assert_int_eq(h.sum_us, 2000 * 2001 / 2);
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double est = gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, h.buckets, qs[i]);
        int64_t exact = (int64_t)(qs[i] * 2000);
        ck_assert_msg(gx_hist_bucket((int64_t)(est + 0.999)) == gx_hist_bucket(exact),
                      "q %g: estimate %g, exact %lld", qs[i], est, (long long)exact);
    }
    ck_assert_double_eq_tol(gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, h.buckets, 0.5),
                            1000, 1e-9); /* 1000 is a bound, 500..700..1000 */
}
END_TEST

/* Counting per mode and per graph, the bound on graphs, and the packed map. */
START_TEST(test_metrics_table)
{
    gxd_metrics *m = NULL;
    ck_assert_int_eq(gxd_metrics_new(2, &m), GX_OK);
    gxd_metrics_job(m, "aa", GX_MODE_SEQ, 7, 120, 150);
    gxd_metrics_job(m, "bb", GX_MODE_INTER, 3000, 40, 3100);
    gxd_metrics_job(m, "aa", GX_MODE_SEQ, 9, 80, 95);
    gxd_metrics_job(m, "cc", GX_MODE_SEQ, 1, 1, 2); /* drops bb, the least recently run */
    const gxd_latency *seq = gxd_metrics_mode(m, GX_MODE_SEQ);
    ck_assert_uint_eq(seq->e2e.count, 3);
    ck_assert_int_eq(seq->queue.sum_us, 17);
    ck_assert_int_eq(seq->compute.sum_us, 201);
    ck_assert_uint_eq(seq->compute.buckets[gx_hist_bucket(120)], 1);
    ck_assert_uint_eq(seq->compute.buckets[gx_hist_bucket(80)], 1);
    ck_assert_uint_eq(gxd_metrics_mode(m, GX_MODE_INTER)->queue.buckets[gx_hist_bucket(3000)], 1);
    ck_assert_ptr_nonnull(gxd_metrics_graph(m, "aa"));
    ck_assert_uint_eq(gxd_metrics_graph(m, "aa")->e2e.count, 2);
    ck_assert_ptr_null(gxd_metrics_graph(m, "bb"));
    ck_assert_uint_eq(gxd_metrics_graph(m, "cc")->e2e.count, 1);

    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    gxd_metrics_pack(m, &pk);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(msgpack_unpack_next(&up, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *bounds = gx_mp_find(&up.data, "bounds_us");
    ck_assert_ptr_nonnull(bounds);
    ck_assert_uint_eq(bounds->via.array.size, GX_HIST_NBOUNDS);
    const msgpack_object *modes = gx_mp_find(&up.data, "modes");
    ck_assert_uint_eq(modes->via.map.size, 2); /* seq and inter; the others ran nothing */
    const msgpack_object *s = gx_mp_find(modes, "seq");
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(gx_mp_find(s, "jobs")->via.u64, 3);
    const msgpack_object *q = gx_mp_find(s, "queue");
    ck_assert_uint_eq(gx_mp_find(q, "count")->via.u64, 3);
    ck_assert_uint_eq(gx_mp_find(q, "sum_us")->via.u64, 17);
    ck_assert_uint_eq(gx_mp_find(q, "buckets")->via.array.size, GX_HIST_NBUCKETS);
    ck_assert_uint_eq(gx_mp_find(&up.data, "graphs")->via.map.size, 2);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    gxd_metrics_destroy(&m);
    ck_assert_ptr_null(m);
    gxd_metrics_destroy(&m);
}
END_TEST

/* y = x + 1 on [1, 8] */
static gx_graph *s_add_graph(void)
{
    gx_graph *g = gx_graph_new("add1");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 8});
    gx_tensor *one = gx_tensor_new(GX_F32, 1, (int64_t[]){1});
    *(float *)gx_tensor_data(one) = 1.0f;
    gx_graph_add_const(g, "one", &one);
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "one"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* What the replies said, per mode: the expected histograms. */
typedef struct expect {
    uint64_t n;
    int64_t queue_sum, compute_sum;
    uint64_t queue[GX_HIST_NBUCKETS], compute[GX_HIST_NBUCKETS];
} expect;

static void s_check_hist(const gx_json *h, const uint64_t *want, uint64_t n, int64_t sum,
                         const char *what)
{
    ck_assert_msg(h != NULL, "%s: missing", what);
    ck_assert_msg(gx_json_num(gx_json_get(h, "count"), -1) == (double)n, "%s: count", what);
    if (sum >= 0)
        ck_assert_msg(gx_json_num(gx_json_get(h, "sum_us"), -1) == (double)sum,
                      "%s: sum %.0f, the replies say %lld", what,
                      gx_json_num(gx_json_get(h, "sum_us"), -1), (long long)sum);
    const gx_json *b = gx_json_get(h, "buckets");
    ck_assert_uint_eq(gx_json_len(b), GX_HIST_NBUCKETS);
    for (size_t i = 0; want && i < GX_HIST_NBUCKETS; i++)
        ck_assert_msg(gx_json_num(gx_json_at(b, i), -1) == (double)want[i],
                      "%s: bucket %zu holds %.0f, the replies say %llu", what, i,
                      gx_json_num(gx_json_at(b, i), -1), (unsigned long long)want[i]);
}

START_TEST(test_stats_histograms_match_replies)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char err[256];
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    gx_graph *g = s_add_graph();
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 8});
    static expect want[GX_MODE_COUNT];
    memset(want, 0, sizeof want);
    const gx_mode modes[] = {GX_MODE_SEQ, GX_MODE_INTER, GX_MODE_SEQ};
    int64_t e2e_floor = 0;
    for (int k = 0; k < 30; k++) {
        gx_request *rq = gx_request_new();
        gx_result *r = NULL;
        gx_request_set_graph_id(rq, &id);
        gx_request_add_input(rq, "x", x);
        gx_request_set_mode(rq, modes[k % 3]);
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
        const gx_run_info *info = gx_result_info(r);
        gx_mode m;
        ck_assert_int_eq(gx_mode_parse(info->mode, &m), GX_OK);
        expect *e = &want[m];
        e->n++;
        e->queue_sum += info->queue_us;
        e->compute_sum += info->compute_us;
        e->queue[gx_hist_bucket(info->queue_us)]++;
        e->compute[gx_hist_bucket(info->compute_us)]++;
        e2e_floor += info->queue_us + info->compute_us;
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
    }
    /* a failed job (wrong input shape) is not in the histograms */
    gx_tensor *bad = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 3});
    gx_request *rq = gx_request_new();
    gx_result *r = NULL;
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", bad);
    ck_assert_int_lt(gx_client_run(c, rq, &r), 0);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&bad);

    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    gx_json *j = gx_json_parse(json, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_uint_eq(gx_json_len(gx_json_path(j, "latency.bounds_us")), GX_HIST_NBOUNDS);
    uint64_t total = 0;
    for (int m = 0; m < GX_MODE_COUNT; m++) {
        char path[64], what[128];
        snprintf(path, sizeof path, "latency.modes.%s", gx_mode_name((gx_mode)m));
        const gx_json *l = gx_json_path(j, path);
        if (!want[m].n) {
            ck_assert_msg(l == NULL, "%s: no job ran in it", path);
            continue;
        }
        ck_assert_msg(l != NULL, "%s missing", path);
        ck_assert_double_eq(gx_json_num(gx_json_get(l, "jobs"), -1), (double)want[m].n);
        snprintf(what, sizeof what, "%s queue", path);
        s_check_hist(gx_json_get(l, "queue"), want[m].queue, want[m].n, want[m].queue_sum, what);
        snprintf(what, sizeof what, "%s compute", path);
        s_check_hist(gx_json_get(l, "compute"), want[m].compute, want[m].n, want[m].compute_sum,
                     what);
        snprintf(what, sizeof what, "%s e2e", path);
        s_check_hist(gx_json_get(l, "e2e"), NULL, want[m].n, -1, what);
        total += want[m].n;
    }
    ck_assert_uint_eq(total, 30);
    const gx_json *graphs = gx_json_path(j, "latency.graphs");
    const gx_json *gl = gx_json_get(graphs, id.hex);
    ck_assert_msg(gl != NULL, "latency.graphs has no %s", id.hex);
    ck_assert_double_eq(gx_json_num(gx_json_get(gl, "jobs"), -1), 30);
    /* end to end holds queue and compute (and compile) of each job */
    ck_assert(gx_json_num(gx_json_path(gl, "e2e.sum_us"), -1) >= (double)e2e_floor);
    ck_assert_double_eq(gx_json_num(gx_json_get(j, "runs_failed"), -1), 1);
    gx_json_destroy(&j);
    free(json);

    /* gexec-submit prints the rows; --prometheus the same counts */
    char out[16384];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --socket %s stats", bin, d.endpoint), 0);
    char row[64];
    ck_assert_msg(strstr(out, "queue p50") && strstr(out, "e2e p50"), "%s", out);
    const char *line = strstr(out, "mode seq");
    ck_assert_msg(line != NULL, "%s", out);
    long jobs = strtol(line + strlen("mode seq"), NULL, 10);
    ck_assert_int_eq(jobs, (long)want[GX_MODE_SEQ].n);
    snprintf(row, sizeof row, "graph %.12s", id.hex);
    ck_assert_msg(strstr(out, row), "no '%s' in %s", row, out);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --socket %s stats --prometheus | grep -v _bucket", bin,
                          d.endpoint),
                     0);
    snprintf(row, sizeof row, "gexec_jobs_total{mode=\"seq\"} %llu\n",
             (unsigned long long)want[GX_MODE_SEQ].n);
    ck_assert_msg(strstr(out, row), "no '%s' in %s", row, out);
    snprintf(row, sizeof row, "gexec_runs_total{status=\"failed\"} 1\n");
    ck_assert_msg(strstr(out, row), "no '%s' in %s", row, out);

    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* gexec-submit perf against examples/mlp.yaml: the report's structure, its
 * numbers consistent with each other and with the daemon's own count. */
START_TEST(test_perf_report)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    static char out[65536];
    char mlp[512], input[512], err[256];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    snprintf(mlp, sizeof mlp, "%s", gxt_srcpath("examples/mlp.yaml"));
    snprintf(input, sizeof input, "%s", gxt_srcpath("examples/mlp_input.npy"));

    int rc = gxt_sh(out, sizeof out, "%s --socket %s perf %s -i x=%s --concurrency 3 --duration 0.5 --json 2>/dev/null",
                    bin, d.endpoint, mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    gx_json *j = gx_json_parse(out, err, sizeof err);
    ck_assert_msg(j != NULL, "%s: %s", err, out);
    double n = gx_json_num(gx_json_get(j, "requests"), -1);
    ck_assert(n >= 1);
    ck_assert_double_eq(gx_json_num(gx_json_get(j, "failed"), -1), 0);
    ck_assert_double_eq(gx_json_num(gx_json_get(j, "concurrency"), -1), 3);
    ck_assert(gx_json_num(gx_json_get(j, "throughput_per_s"), -1) > 0);
    const char *qs[] = {"min", "p50", "p90", "p99", "p99.9", "max"};
    double prev = 0;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        const gx_json *v = gx_json_get(gx_json_get(j, "latency_us"), qs[i]);
        ck_assert_msg(v && v->type == GX_JSON_NUM, "latency_us.%s missing", qs[i]);
        ck_assert_msg(v->num >= prev, "latency_us.%s = %g below the one before (%g)", qs[i], v->num, prev);
        prev = v->num;
    }
    double split = 0;
    const char *parts[] = {"client", "queue", "compile", "compute"};
    for (size_t i = 0; i < 4; i++) {
        const gx_json *v = gx_json_get(gx_json_get(j, "split_us"), parts[i]);
        ck_assert_msg(v && v->type == GX_JSON_NUM, "split_us.%s missing", parts[i]);
        split += v->num;
    }
    ck_assert_double_eq_tol(split, gx_json_num(gx_json_path(j, "latency_us.mean"), -1), 0.5);
    const gx_json *modes = gx_json_get(j, "modes");
    double sum = 0;
    for (size_t i = 0; modes && i < modes->n; i++)
        sum += modes->items[i].num;
    ck_assert_double_eq(sum, n);
    char id[80];
    snprintf(id, sizeof id, "%s", gx_json_str(gx_json_get(j, "graph_id"), ""));
    gx_json_destroy(&j);

    /* the daemon ran exactly those requests and the warm-up */
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    j = gx_json_parse(json, err, sizeof err);
    const gx_json *g = gx_json_get(gx_json_path(j, "latency.graphs"), id);
    ck_assert_msg(g != NULL, "no graph %s in STATS", id);
    ck_assert_double_eq(gx_json_num(gx_json_get(g, "jobs"), -1), n + 1);
    gx_json_destroy(&j);
    free(json);
    gx_client_destroy(&c);

    /* open loop: 100/s for 0.5 s is 50 requests, however fast they are */
    rc = gxt_sh(out, sizeof out, "%s --socket %s perf %s -i x=%s --rate 100 --duration 0.5 --json 2>/dev/null",
                bin, d.endpoint, mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    j = gx_json_parse(out, err, sizeof err);
    ck_assert_msg(j != NULL, "%s: %s", err, out);
    ck_assert_double_eq(gx_json_num(gx_json_get(j, "requests"), -1), 50);
    ck_assert_double_eq(gx_json_num(gx_json_get(j, "rate"), -1), 100);
    gx_json_destroy(&j);

    /* the text report and its progress lines */
    rc = gxt_sh(out, sizeof out, "%s --socket %s perf %s -i x=%s --duration 0.3 --mode seq 2>&1", bin,
                d.endpoint, mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    const char *want[] = {"throughput:", "infer/s", "p50 ", "p90 ", "p99 ", "p99.9 ", "mean split:",
                          "client ", "queue ", "compute ", "modes:", " seq "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "no '%s' in %s", want[i], out);

    /* a request that cannot run: a non-zero exit and the daemon's reason */
    rc = gxt_sh(out, sizeof out, "%s --socket %s perf %s --duration 0.2 2>&1", bin, d.endpoint, mlp);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "missing input 'x'"), "%s", out);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The value of counter key in STATS (-1 when absent). */
static double s_stat(gx_client *c, const char *key)
{
    char *json = NULL, err[128];
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    gx_json *j = gx_json_parse(json, err, sizeof err);
    double v = gx_json_num(gx_json_get(j, key), -1);
    gx_json_destroy(&j);
    free(json);
    return v;
}

/* Poll STATS until key reaches want (no sleep decides anything: the loop
 * only bounds the wait). */
static void s_wait_stat(gx_client *c, const char *key, double want)
{
    for (int i = 0; i < 1000; i++) {
        if (s_stat(c, key) == want)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("STATS %s never became %g", key, want);
}

static void s_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* SIGHUP changes queue.max_jobs while a job runs; a file that does not load
 * leaves the running configuration as it was. One worker, held by a job
 * that runs until it is cancelled (python/tests/data/spin.yaml). */
START_TEST(test_sighup_reload_queue_bound)
{
    char *dir = gxt_tmpdir(), conf[512], err[256];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    s_write(conf, "queue:\n  max_jobs: 64\nprofile:\n  dir: \"\"\ntune:\n  mode: \"off\"\n");
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *const[]){"-c", conf, "--cpus", "0", NULL});
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    gx_graph *g = NULL;
    ck_assert_msg(gx_graph_load_yaml(gxt_srcpath("python/tests/data/spin.yaml"), &g, err, sizeof err) == GX_OK,
                  "%s", err);
    gx_tensor *x = gx_tensor_new(GX_F32, 1, (int64_t[]){2});
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_job *a = NULL, *b = NULL, *full = NULL;
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_submit(c, rq, &a), GX_OK);
    s_wait_stat(c, "workers_busy", 1);

    s_write(conf, "queue:\n  max_jobs: 1\nprofile:\n  dir: \"\"\ntune:\n  mode: \"off\"\n");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    s_wait_stat(c, "config_reloads", 1);
    ck_assert_int_eq(gx_client_submit(c, rq, &b), GX_OK); /* queued: the one place */
    ck_assert_int_eq(gx_client_submit(c, rq, &full), GX_OK);
    ck_assert_int_eq(gx_job_wait(full, 30000, &r), GX_EQUEUEFULL);
    ck_assert_msg(strstr(gx_result_message(r), "queue.max_jobs = 1"), "%s", gx_result_message(r));
    gx_result_destroy(&r);
    gx_job_destroy(&full);

    /* a bad file: refused, the bound stays 1 */
    s_write(conf, "queue:\n  max_jobs: lots\n");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    s_wait_stat(c, "config_reload_failures", 1);
    ck_assert_double_eq(s_stat(c, "config_reloads"), 1);
    ck_assert_int_eq(gx_client_submit(c, rq, &full), GX_OK);
    ck_assert_int_eq(gx_job_wait(full, 30000, &r), GX_EQUEUEFULL);
    gx_result_destroy(&r);
    gx_job_destroy(&full);

    /* the running and the queued job are unharmed: cancelled now, they say so */
    ck_assert_int_eq(gx_job_cancel(b), GX_OK);
    ck_assert_int_eq(gx_job_cancel(a), GX_OK);
    ck_assert_int_eq(gx_job_wait(b, 30000, &r), GX_ECANCELLED);
    gx_result_destroy(&r);
    ck_assert_int_eq(gx_job_wait(a, 30000, &r), GX_ECANCELLED);
    gx_result_destroy(&r);
    gx_job_destroy(&a);
    gx_job_destroy(&b);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Per device: the jobs that ran on it and the memory it holds, in STATS
 * and in the Prometheus text. gexecd-testdev offers the test device first
 * (tests/testdev.c: memory of its own from its alloc), so every step of
 * the MLP goes there and the CPU only copies. */
START_TEST(test_device_stats)
{
    char *dir = gxt_tmpdir(), conf[512], err[256];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    /* no re-plans: the device's memory stays what the three jobs left */
    s_write(conf, "partition:\n  prefer: [testdev, cpu]\n  min_nodes: 1\n  cost_check: false\n"
                  "compiler:\n  replan: false\n"
                  "profile:\n  dir: \"\"\ntune:\n  mode: \"off\"\nartifacts:\n  dir: \"\"\n");
    setenv("GEXECD", GX_TEST_BUILDDIR "/tests/gexecd-testdev", 1);
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *const[]){"-c", conf, NULL});
    unsetenv("GEXECD");
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    gx_graph *g = NULL;
    gx_tensor *x = NULL;
    ck_assert_msg(gx_graph_load_yaml(gxt_srcpath("examples/mlp.yaml"), &g, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_msg(gx_npy_load(gxt_srcpath("examples/mlp_input.npy"), &x, err, sizeof err) == GX_OK,
                  "%s", err);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    for (int i = 0; i < 3; i++) {
        gx_result *r = NULL;
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
        ck_assert_msg(strstr(gx_result_info(r)->device, "testdev"), "%s", gx_result_info(r)->device);
        gx_result_destroy(&r);
    }

    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    gx_json *j = gx_json_parse(json, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_double_eq(gx_json_num(gx_json_path(j, "devices.testdev.jobs"), -1), 3);
    /* its arenas and the plan's constants (the workers keep their arenas) */
    ck_assert_msg(gx_json_num(gx_json_path(j, "devices.testdev.memory_bytes"), -1) > 0, "%s", json);
    /* the CPU: the loaded graph and its plan, as limits.max_memory_bytes counts */
    ck_assert_msg(gx_json_num(gx_json_path(j, "devices.cpu.memory_bytes"), -1) > 0, "%s", json);
    double dev_bytes = gx_json_num(gx_json_path(j, "devices.testdev.memory_bytes"), -1);
    gx_json_destroy(&j);
    free(json);

    char *text = NULL, want[128];
    ck_assert_int_eq(gx_client_metrics(c, &text), GX_OK);
    ck_assert_msg(strstr(text, "gexec_device_jobs_total{device=\"testdev\"} 3\n"), "%s", text);
    ck_assert_msg(strstr(text, "gexec_device_jobs_total{device=\"cpu\"} "), "%s", text);
    snprintf(want, sizeof want, "gexec_device_memory_bytes{device=\"testdev\"} %.0f\n", dev_bytes);
    ck_assert_msg(strstr(text, want), "%s\nwant %s", text, want);
    ck_assert_msg(strstr(text, "# TYPE gexec_device_memory_bytes gauge\n"), "%s", text);
    free(text);

    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_version)
{
    char out[512];
    ck_assert_str_eq(gx_version(), PACKAGE_VERSION);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --version", GX_TEST_BUILDDIR "/libclient/gexec-submit"), 0);
    ck_assert_str_eq(out, "gexec-submit " PACKAGE_VERSION " (libgexec " PACKAGE_VERSION ")\n");
}
END_TEST

Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hist_buckets);
    tcase_add_test(tc, test_hist_quantile);
    tcase_add_test(tc, test_metrics_table);
    tcase_add_test(tc, test_stats_histograms_match_replies);
    tcase_add_test(tc, test_perf_report);
    tcase_add_test(tc, test_sighup_reload_queue_bound);
    tcase_add_test(tc, test_device_stats);
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);
    return s;
}
