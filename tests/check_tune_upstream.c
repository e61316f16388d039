/*
 * The central registry (tune.upstream, daemon/tune/upstream.c): against a
 * throwaway PostgreSQL server of the suite's own (Debian's postgresql
 * package: initdb in a temporary directory, a unix socket there, no TCP;
 * run as nobody when the suite runs as root, since the server refuses
 * root). Without the server's binaries every test says why and passes
 * without checking anything (a SKIP line on stdout).
 *
 * The server is started by an unchecked fixture (the runner's process)
 * and stopped, its directory removed, by the fixture's teardown and by an
 * atexit handler, whatever the tests did; a test that stops it starts it
 * again with s_pg_up (pg_ctl -w: it returns once the server accepts
 * connections, so nothing here waits by time).
 */
#include <check.h>
#include <glob.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/tune/tune.h"
#include "gexec/client.h"
#include "core/internal.h"
#include "tests/testutil.h"
#include "tests/tunetest.h"

#define S_K 64
#define S_N 32

/* The server: its binaries' directory, its temporary directory (data/
 * and the socket), who runs it ("" ourselves, else "runuser -u nobody --"),
 * and why it cannot run ("" when it can). */
static char s_bin[512], s_dir[256], s_as[64], s_skip[512], s_url[600];
static pid_t s_owner; /* the process that started it (Check's forked tests inherit atexit) */

static void s_pg_cleanup(void)
{
    if (!s_dir[0] || getpid() != s_owner)
        return;
    char out[4096];
    (void)gxt_sh(out, sizeof out, "%s %s/pg_ctl -D %s/data -m immediate -w stop 2>&1", s_as,
                 s_bin, s_dir);
    gxt_rmtree(s_dir);
    s_dir[0] = '\0';
}

/* pg_ctl start -w: returns once the server takes connections. */
static int s_pg_start(char *out, size_t len)
{
    return gxt_sh(out, len,
                  "%s %s/pg_ctl -D %s/data -l %s/log -w -t 120 -o \"-k %s -c listen_addresses=''"
                  " -F\" start 2>&1",
                  s_as, s_bin, s_dir, s_dir, s_dir);
}

static void s_pg_setup(void)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || !g.gl_pathc) {
        snprintf(s_skip, sizeof s_skip,
                 "no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb): install Debian's "
                 "postgresql package");
        return;
    }
    snprintf(s_bin, sizeof s_bin, "%s", g.gl_pathv[g.gl_pathc - 1]); /* the newest */
    globfree(&g);
    *strrchr(s_bin, '/') = '\0';
    char tmpl[] = "/tmp/gexec-pg-XXXXXX", out[4096];
    if (!mkdtemp(tmpl)) {
        snprintf(s_skip, sizeof s_skip, "mkdtemp failed");
        return;
    }
    snprintf(s_dir, sizeof s_dir, "%s", tmpl);
    s_owner = getpid();
    atexit(s_pg_cleanup);
    if (geteuid() == 0) { /* the server refuses root */
        snprintf(s_as, sizeof s_as, "runuser -u nobody --");
        if (gxt_sh(out, sizeof out, "chown nobody %s 2>&1", s_dir) != 0) {
            snprintf(s_skip, sizeof s_skip, "chown nobody: %.300s", out);
            return;
        }
    }
    if (gxt_sh(out, sizeof out,
               "%s %s/initdb -D %s/data -U gexec -A trust --no-sync --no-locale -E UTF8 2>&1",
               s_as, s_bin, s_dir) != 0) {
        snprintf(s_skip, sizeof s_skip, "initdb failed: %.400s", out);
        return;
    }
    if (s_pg_start(out, sizeof out) != 0) {
        snprintf(s_skip, sizeof s_skip, "the server did not start: %.400s", out);
        return;
    }
    snprintf(s_url, sizeof s_url, "postgresql:///postgres?host=%s&user=gexec", s_dir);
}

static void s_pg_teardown(void)
{
    s_pg_cleanup();
}

/* true when the server can run (else prints why, once per test). */
static bool s_have_pg(void)
{
    if (s_skip[0])
        printf("SKIP tune_upstream: %s\n", s_skip);
    return !s_skip[0];
}

static void s_pg_up(void)
{
    char out[4096];
    if (gxt_sh(out, sizeof out, "%s %s/pg_ctl -D %s/data status >/dev/null 2>&1", s_as, s_bin,
               s_dir) != 0)
        ck_assert_msg(s_pg_start(out, sizeof out) == 0, "%s", out);
}

static void s_pg_down(void)
{
    char out[4096];
    ck_assert_msg(gxt_sh(out, sizeof out, "%s %s/pg_ctl -D %s/data -m fast -w stop 2>&1", s_as,
                         s_bin, s_dir) == 0,
                  "%s", out);
}

/* Run sql on the server (the suite's own connection). */
static void s_sql(const char *sql)
{
    PGconn *pg = PQconnectdb(s_url);
    ck_assert_msg(PQstatus(pg) == CONNECTION_OK, "%s", PQerrorMessage(pg));
    PQclear(PQexec(pg, "SET client_min_messages = warning"));
    PGresult *r = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
                  "%s: %s", sql, PQerrorMessage(pg));
    PQclear(r);
    PQfinish(pg);
}

/* Each test: the server up, an empty central table. */
static void s_fresh(void)
{
    s_pg_up();
    s_sql("DROP TABLE IF EXISTS winners");
}

/* A registry in mode cache on dir (NULL: memory only) with url upstream
 * (NULL: none), logging into lg when not NULL; keeping at most
 * s_up_max rows there (0: the default). */
static int64_t s_up_max;
static gxd_tune *s_new(const char *dir, const char *url, gxd_log *lg)
{
    char err[256];
    gxd_tune_opts o = {.mode = GXD_TUNE_CACHE, .dir = dir, .budget_ms = 20, .upstream = url,
                       .log = lg, .upstream_max_records = s_up_max};
    gxd_tune *t = gxd_tune_new(&o, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    return t;
}

static gxd_tune_stats s_stats(gxd_tune *t)
{
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    return st;
}

/* Memory, then tune.db, then the central registry; a central record is
 * copied into tune.db and memory. */
START_TEST(test_lookup_order)
{
    if (!s_have_pg())
        return;
    s_fresh();
    char *da = gxt_tmpdir(), *db = gxt_tmpdir();
    gxd_tune *a = s_new(da, s_url, NULL), *b = s_new(db, s_url, NULL);
    const gxd_tune_sig s = tt_sig(8, S_K, S_N);
    gxd_tune_rec r = tt_rec("blas", 700, "a"), got;
    bool found;
    ck_assert_int_eq(gxd_tune_store(a, &s, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_upstream_sync(a), GX_OK);
    ck_assert_int_eq(s_stats(a).upstream_written, 1);

    ck_assert_int_eq(gxd_tune_upstream_sync(b), GX_OK); /* b connected */
    gxd_tune_lookup_batch(b, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_CENTRAL);
    ck_assert_str_eq(got.impl, "blas");
    ck_assert_int_eq(got.ns, 700);
    ck_assert_str_eq(got.host, "a");
    gxd_tune_lookup_batch(b, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_MEMORY);
    gxd_tune_cache_clear(b);
    gxd_tune_lookup_batch(b, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_LOCAL); /* copied into b's tune.db */
    gxd_tune_stats st = s_stats(b);
    ck_assert_int_eq(st.lookups, 3);
    ck_assert_int_eq(st.hits[GXD_TUNE_CENTRAL], 1);
    ck_assert_int_eq(st.hits[GXD_TUNE_MEMORY], 1);
    ck_assert_int_eq(st.hits[GXD_TUNE_LOCAL], 1);
    ck_assert_int_eq(st.misses, 0);
    ck_assert(st.upstream_up);
    ck_assert_int_eq(st.n_top, 1); /* found once since the cache was cleared */
    ck_assert_int_eq(st.top[0].reuse, 1);
    gxd_tune_destroy(&b);

    /* b's tune.db alone has it now */
    gxd_tune *c = s_new(db, NULL, NULL);
    gxd_tune_lookup_batch(c, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_LOCAL);
    ck_assert_int_eq(got.ns, 700);
    gxd_tune_destroy(&c);
    gxd_tune_destroy(&a);
    gxt_rmtree(da);
    gxt_rmtree(db);
    free(da);
    free(db);
}
END_TEST

/* One batch: the found ones, the misses, and the family's other batch
 * sizes prefetched into memory. */
START_TEST(test_batch)
{
    if (!s_have_pg())
        return;
    s_fresh();
    gxd_tune *a = s_new(NULL, s_url, NULL), *b = s_new(NULL, s_url, NULL);
    const gxd_tune_sig s8 = tt_sig(8, S_K, S_N), s16 = tt_sig(16, S_K, S_N),
                       s32 = tt_sig(32, S_K, S_N), s64 = tt_sig(64, S_K, S_N),
                       o8 = tt_sig(8, S_K, 2 * S_N);
    const gxd_tune_rec r = tt_rec("plain", 100, "a");
    ck_assert_int_eq(gxd_tune_store(a, &s8, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_store(a, &s16, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_store(a, &s32, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_store(a, &o8, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_upstream_sync(a), GX_OK);
    ck_assert_int_eq(s_stats(a).upstream_written, 4);

    ck_assert_int_eq(gxd_tune_upstream_sync(b), GX_OK);
    const gxd_tune_sig ask[3] = {s8, s64, o8};
    gxd_tune_rec got[3];
    bool found[3];
    gxd_tune_lookup_batch(b, ask, 3, got, found);
    ck_assert(found[0] && !found[1] && found[2]);
    ck_assert_int_eq(got[0].level, GXD_TUNE_CENTRAL);
    ck_assert_int_eq(got[2].level, GXD_TUNE_CENTRAL);
    gxd_tune_stats st = s_stats(b);
    ck_assert_int_eq(st.hits[GXD_TUNE_CENTRAL], 2);
    ck_assert_int_eq(st.misses, 1);
    ck_assert_int_eq(st.prefetched, 2); /* s16, s32 */
    gxd_tune_lookup_batch(b, &s16, 1, got, found);
    ck_assert(found[0]);
    ck_assert_int_eq(got[0].level, GXD_TUNE_MEMORY);
    gxd_tune_destroy(&a);
    gxd_tune_destroy(&b);
}
END_TEST

/* Two registries writing the same keys: the faster record stays, in
 * whichever order the writes arrive. */
typedef struct s_racer {
    gxd_tune *t;
    int64_t base;
    int rc;
} s_racer;

#define S_RACE_KEYS 40

/* Key i's time for racer base: the two racers alternate as the faster. */
static int64_t s_race_ns(int64_t base, int i)
{
    return (i % 2 ? base : 3000 - base) + i;
}

static void *s_race(void *arg)
{
    s_racer *r = arg;
    for (int i = 0; i < S_RACE_KEYS; i++) {
        const gxd_tune_sig s = tt_sig(i + 1, S_K, S_N);
        const gxd_tune_rec rec = tt_rec(r->base == 1000 ? "plain" : "blas", s_race_ns(r->base, i),
                                       r->base == 1000 ? "a" : "b");
        gxd_tune_store(r->t, &s, &rec);
        if (i % 8 == 0)
            (void)gxd_tune_upstream_sync(r->t); /* interleave with the thread's writes */
    }
    r->rc = gxd_tune_upstream_sync(r->t);
    return NULL;
}

START_TEST(test_upsert_race)
{
    if (!s_have_pg())
        return;
    s_fresh();
    s_racer ra = {.t = s_new(NULL, s_url, NULL), .base = 1000},
            rb = {.t = s_new(NULL, s_url, NULL), .base = 2000};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, s_race, &ra), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, s_race, &rb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(ra.rc, GX_OK);
    ck_assert_int_eq(rb.rc, GX_OK);
    ck_assert_int_eq(s_stats(ra.t).upstream_written, S_RACE_KEYS);
    ck_assert_int_eq(s_stats(rb.t).upstream_written, S_RACE_KEYS);

    gxd_tune *c = s_new(NULL, s_url, NULL);
    ck_assert_int_eq(gxd_tune_upstream_sync(c), GX_OK);
    gxd_tune_sig sigs[S_RACE_KEYS];
    gxd_tune_rec got[S_RACE_KEYS];
    bool found[S_RACE_KEYS];
    for (int i = 0; i < S_RACE_KEYS; i++)
        sigs[i] = tt_sig(i + 1, S_K, S_N);
    gxd_tune_lookup_batch(c, sigs, S_RACE_KEYS, got, found);
    for (int i = 0; i < S_RACE_KEYS; i++) {
        const int64_t a = s_race_ns(1000, i), b = s_race_ns(2000, i);
        ck_assert_msg(found[i], "key %d", i);
        ck_assert_int_eq(got[i].level, GXD_TUNE_CENTRAL);
        ck_assert_int_eq(got[i].ns, a < b ? a : b);
        ck_assert_str_eq(got[i].host, a < b ? "a" : "b");
    }

    /* a slower record after a faster one changes nothing; a faster one wins */
    const gxd_tune_sig s = tt_sig(1, S_K, S_N);
    gxd_tune_rec slow = tt_rec("plain", 999999, "slow"), fast = tt_rec("blas", 5, "fast"), r;
    gxd_tune_store(ra.t, &s, &slow);
    ck_assert_int_eq(gxd_tune_upstream_sync(ra.t), GX_OK);
    gxd_tune_cache_clear(c);
    gxd_tune_lookup_batch(c, &s, 1, &r, found);
    ck_assert(found[0]);
    ck_assert_int_eq(r.ns, s_race_ns(2000, 0) < s_race_ns(1000, 0) ? s_race_ns(2000, 0)
                                                                    : s_race_ns(1000, 0));
    gxd_tune_store(rb.t, &s, &fast);
    ck_assert_int_eq(gxd_tune_upstream_sync(rb.t), GX_OK);
    gxd_tune_cache_clear(c);
    gxd_tune_lookup_batch(c, &s, 1, &r, found);
    ck_assert(found[0]);
    ck_assert_int_eq(r.ns, 5);
    ck_assert_str_eq(r.host, "fast");
    gxd_tune_destroy(&ra.t);
    gxd_tune_destroy(&rb.t);
    gxd_tune_destroy(&c);
}
END_TEST

static int s_count(const char *path, const char *what)
{
    char out[64];
    gxt_sh(out, sizeof out, "grep -c '%s' %s", what, path);
    return atoi(out);
}

/* Down at start: the registry works from tune.db, the winner waits in the
 * queue; once the server is up a retry connects and sends it. */
START_TEST(test_down_then_up)
{
    if (!s_have_pg())
        return;
    s_fresh();
    s_pg_down();
    char *dir = gxt_tmpdir(), logp[300];
    snprintf(logp, sizeof logp, "%s/log", dir);
    gxd_log lg;
    gxd_log_init(&lg, GXD_LOG_INFO);
    char why[256];
    ck_assert_msg(gxd_log_detach(&lg, logp, why, sizeof why) == GX_OK, "%s", why);
    gxd_tune *t = s_new(dir, s_url, &lg);
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_EIO);
    const gxd_tune_sig s = tt_sig(8, S_K, S_N), s2 = tt_sig(9, S_K, S_N);
    gxd_tune_rec r = tt_rec("blas", 700, "here"), got;
    bool found;
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK); /* tune.db takes it */
    gxd_tune_cache_clear(t);
    gxd_tune_lookup_batch(t, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_LOCAL);
    gxd_tune_lookup_batch(t, &s2, 1, &got, &found);
    ck_assert(!found);
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_EIO);
    gxd_tune_stats st = s_stats(t);
    ck_assert(!st.upstream_up);
    ck_assert_int_ge(st.upstream_errors, 2);
    ck_assert_int_eq(st.upstream_queued, 1);
    ck_assert_int_eq(st.upstream_written, 0);
    ck_assert_int_eq(s_count(logp, "central registry unreachable"), 1); /* once */

    s_pg_up();
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_OK);
    st = s_stats(t);
    ck_assert(st.upstream_up);
    ck_assert_int_eq(st.upstream_queued, 0);
    ck_assert_int_eq(st.upstream_written, 1);
    ck_assert_int_eq(s_count(logp, "central registry reachable again"), 1);
    gxd_tune_destroy(&t);
    close(lg.fd);

    gxd_tune *o = s_new(NULL, s_url, NULL); /* another daemon finds it */
    ck_assert_int_eq(gxd_tune_upstream_sync(o), GX_OK);
    gxd_tune_lookup_batch(o, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_CENTRAL);
    gxd_tune_destroy(&o);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* The server goes away while connected: lookups still answer (from tune.db
 * and memory), the outage is logged once, a retry reconnects. */
START_TEST(test_goes_away)
{
    if (!s_have_pg())
        return;
    s_fresh();
    char *dir = gxt_tmpdir(), logp[300], why[256];
    snprintf(logp, sizeof logp, "%s/log", dir);
    gxd_log lg;
    gxd_log_init(&lg, GXD_LOG_INFO);
    ck_assert_msg(gxd_log_detach(&lg, logp, why, sizeof why) == GX_OK, "%s", why);
    gxd_tune *t = s_new(dir, s_url, &lg);
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_OK);
    const gxd_tune_sig s = tt_sig(8, S_K, S_N);
    gxd_tune_rec r = tt_rec("blas", 700, "here"), got;
    bool found;
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_OK);

    s_pg_down();
    for (int i = 0; i < 5; i++) { /* misses: each would ask the server */
        const gxd_tune_sig m = tt_sig(100 + i, S_K, S_N);
        gxd_tune_lookup_batch(t, &m, 1, &got, &found);
        ck_assert(!found);
    }
    gxd_tune_cache_clear(t);
    gxd_tune_lookup_batch(t, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_LOCAL);
    gxd_tune_store(t, &s, &r); /* queued */
    gxd_tune_stats st = s_stats(t);
    ck_assert(!st.upstream_up);
    ck_assert_int_ge(st.upstream_errors, 1);
    ck_assert_int_eq(st.misses, 5);
    ck_assert_int_eq(s_count(logp, "central registry"), 1);

    s_pg_up();
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_OK);
    ck_assert_int_eq(s_stats(t).upstream_queued, 0);
    ck_assert_int_eq(s_count(logp, "central registry reachable again"), 1);
    gxd_tune_destroy(&t);
    close(lg.fd);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A URL that is not PostgreSQL's: the config refuses it; a registry given
 * one works without it, counting the error. */
START_TEST(test_bad_url)
{
    gxd_config c;
    gxd_config_init(&c);
    char err[512];
    ck_assert_str_eq(c.tune_upstream, "");
    ck_assert_int_eq(gxd_config_set(&c, "tune.upstream", "mysql://x/y", err, sizeof err),
                     GX_ECONFIG);
    ck_assert_msg(strstr(err, "postgresql://"), "%s", err);
    ck_assert_int_eq(
        gxd_config_set(&c, "tune.upstream", "postgresql://h/db?nosuchoption=1", err, sizeof err),
        GX_ECONFIG);
    ck_assert_int_eq(gxd_config_set(&c, "tune.upstream", "postgresql://gexec@db.site/tune", err,
                                    sizeof err),
                     GX_OK);
    ck_assert_str_eq(c.tune_upstream, "postgresql://gexec@db.site/tune");
    gxd_config_fini(&c);

    gxd_tune *t = s_new(NULL, "mysql://x/y", NULL);
    const gxd_tune_sig s = tt_sig(8, S_K, S_N);
    gxd_tune_rec r = tt_rec("blas", 700, "here"), got;
    bool found;
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    gxd_tune_lookup_batch(t, &s, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_MEMORY);
    ck_assert_int_eq(gxd_tune_upstream_sync(t), GX_EIO);
    ck_assert_int_eq(s_stats(t).upstream_errors, 1);
    gxd_tune_destroy(&t);
}
END_TEST

/* A real gexecd: with the server down its jobs are answered (the default
 * runs) and STATS says so; with it up, a record another daemon wrote is
 * what the plan runs ("tuned (central)"). */
static gx_graph *s_graph(float *w)
{
    for (int i = 0; i < S_K * S_N; i++)
        w[i] = (float)((i * 37) % 17) / 16.0f - 0.5f;
    gx_graph *g = gx_graph_new("up");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, S_K}), GX_OK);
    gxt_const(g, "w", GX_F32, 2, (int64_t[]){S_K, S_N}, w);
    ck_assert_ptr_nonnull(
        gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"x", "w"}, 1,
                          (const char *[]){"y"}));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static char *s_explain(gx_client *c, const gx_graph *g, bool tune)
{
    gx_request *rq = gx_request_new();
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){4, S_K});
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    char *json = NULL;
    const int rc = tune ? gx_client_tune(c, rq, &json) : gx_client_explain(c, rq, &json);
    ck_assert_msg(rc == GX_OK, "%s", gx_client_last_error(c));
    gx_tensor_destroy(&x);
    gx_request_destroy(&rq);
    return json;
}

START_TEST(test_daemon)
{
    if (!s_have_pg())
        return;
    s_fresh();
    static float w[S_K * S_N];
    gx_graph *g = s_graph(w);
    char yaml[1200], *json;
    snprintf(yaml, sizeof yaml,
             "tune:\n  mode: cache\n  dir: \"\"\n  upstream: \"%s\"\nprofile:\n  dir: \"\"\n",
             s_url);

    s_pg_down();
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, yaml, NULL);
    gx_client *c = gxt_client(&d);
    json = s_explain(c, g, false);
    ck_assert_msg(strstr(json, "\"source\":\"default\""), "%s", json);
    free(json);
    while (gxt_stat(c, "tune.upstream_errors") < 1) /* its thread tried */
        usleep(10000);
    ck_assert_int_eq(gxt_stat(c, "tune.upstream_up"), 0);
    json = s_explain(c, g, false); /* still answered */
    free(json);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(d.dir);
    free(d.dir);

    /* a daemon measures the signature (TUNE) and writes the winner up; a
     * second one, with no tune.db, runs it from the central registry (the
     * key holds OpenBLAS's core type, which gexecd sets: so the record
     * comes from a gexecd) */
    s_pg_up();
    gxt_daemon_start_yaml(&d, yaml, NULL);
    c = gxt_client(&d);
    gxt_wait_stats(c, "\"upstream_up\":1");
    json = s_explain(c, g, true);
    free(json);
    gxt_wait_stats(c, "\"upstream_written\":1,"); /* explored, stored, sent */
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(d.dir);
    free(d.dir);

    gxt_daemon_start_yaml(&d, yaml, NULL);
    c = gxt_client(&d);
    gxt_wait_stats(c, "\"upstream_up\":1"); /* its thread connected */
    json = s_explain(c, g, false);
    ck_assert_msg(strstr(json, "\"source\":\"tuned (central)\""), "%s", json);
    free(json);
    ck_assert_int_eq(gxt_stat(c, "tune.hits_central"), 1);
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    ck_assert_msg(strstr(json, "\"top\":[{\"signature\":\"MatMul f32 a[4,64] b[64,32] y[4,32] "
                               "plain\",\"impl\":\""),
                  "%s", json);
    free(json);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(d.dir);
    free(d.dir);
    gx_graph_destroy(&g);
}
END_TEST

/* The central registry bounded (tune.upstream_max_records): beyond it the
 * least recently used rows go (a lookup that found one uses it), fewest
 * reuses first; a table made by an older gexecd (no reuse, no used_at)
 * gets the columns. */
START_TEST(test_trim)
{
    if (!s_have_pg())
        return;
    s_fresh();
    s_sql("CREATE TABLE winners(key TEXT PRIMARY KEY, family TEXT NOT NULL, op TEXT NOT NULL,"
          " impl TEXT NOT NULL, version INTEGER NOT NULL, ns BIGINT NOT NULL,"
          " others TEXT NOT NULL, validation TEXT NOT NULL, host TEXT NOT NULL,"
          " measured_at BIGINT NOT NULL)");
    s_up_max = 4;
    gxd_tune *a = s_new(NULL, s_url, NULL);
    s_up_max = 0;
    gxd_tune *b = s_new(NULL, s_url, NULL);
    gxd_tune_sig sig[6];
    for (int i = 0; i < 6; i++) {
        sig[i] = tt_sig(i + 1, S_K, S_N);
        if (i == 4) { /* k0 used by b; then two more written */
            gxd_tune_rec got;
            bool found;
            ck_assert_int_eq(gxd_tune_upstream_sync(b), GX_OK);
            gxd_tune_lookup_batch(b, &sig[0], 1, &got, &found);
            ck_assert(found);
            ck_assert_int_eq(got.level, GXD_TUNE_CENTRAL);
        }
        gxd_tune_rec r = tt_rec("blas", 100 + i, "a");
        r.measured_at = 1700000000 + i;
        ck_assert_int_eq(gxd_tune_store(a, &sig[i], &r), GX_OK);
        ck_assert_int_eq(gxd_tune_upstream_sync(a), GX_OK);
        ck_assert_int_eq(s_stats(a).upstream_trimmed, i < 4 ? 0 : i - 3);
    }
    /* kept: k0 (used), k3, k4, k5; gone: k1, k2 (least recently used) */
    gxd_tune *c = s_new(NULL, s_url, NULL);
    ck_assert_int_eq(gxd_tune_upstream_sync(c), GX_OK);
    for (int i = 0; i < 6; i++) {
        gxd_tune_rec got;
        bool found;
        gxd_tune_lookup_batch(c, &sig[i], 1, &got, &found);
        ck_assert_msg(found == (i == 0 || i >= 3), "k%d %s", i, found ? "kept" : "removed");
    }
    gxd_tune_destroy(&c);
    gxd_tune_destroy(&b);
    gxd_tune_destroy(&a);
}
END_TEST

Suite *tune_upstream_suite(void)
{
    Suite *s = suite_create("tune_upstream");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, s_pg_setup, s_pg_teardown);
    tcase_add_test(tc, test_lookup_order);
    tcase_add_test(tc, test_batch);
    tcase_add_test(tc, test_upsert_race);
    tcase_add_test(tc, test_down_then_up);
    tcase_add_test(tc, test_goes_away);
    tcase_add_test(tc, test_bad_url);
    tcase_add_test(tc, test_trim);
    tcase_add_test(tc, test_daemon);
    suite_add_tcase(s, tc);
    return s;
}
