/*
 * The best-implementation registry (daemon/tune, docs/tune.md): lookup
 * order (memory, then tune.db), one batch per plan, tune.db across a
 * restart, a corrupt tune.db moved aside and rebuilt, exploration with a
 * planted candidate that is faster but wrong (rejected, the reason kept)
 * and one that is faster and right (wins, the prepare pass picks it, the
 * old plan is stale for the re-planner), the explorer thread, mode off.
 *
 * No assert depends on how fast anything ran: planted candidates have
 * their measured time fixed (gxd_tune_impl.fixed_ns, 1 ns: faster than
 * any real run), and the real ones are only checked to have been timed.
 */
#include <config.h>

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/compile/artifact.h"
#include "daemon/compile/compile.h"
#include "daemon/config.h"
#include "daemon/exec/exec.h"
#include "daemon/tune/tune.h"
#include "gexec/client.h"
#include "core/internal.h"
#include "core/wire.h"
#include "ops/cpu/cpu.h"
#include "ops/fused.h"
#include "ops/gemm.h"
#include "tests/testutil.h"
#include "tests/tunetest.h"

#ifdef HAVE_DNNL
#include <omp.h>
#endif
#include <sqlite3.h>

#include "daemon/tune/tune_internal.h" /* gxd_tune_buildinfo: a schema-2 key's builds */

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

#define S_M 4
#define S_K 64
#define S_N 32

static const gxd_compile_limits s_lim0 = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                          .max_arena_bytes = 256ll << 20};

static gxd_tune *s_new(const char *dir, gxd_tune_mode mode)
{
    char err[256];
    gxd_tune_opts o = {.mode = mode, .dir = dir, .budget_ms = 20};
    gxd_tune *t = gxd_tune_new(&o, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    return t;
}

/* ---- planted candidates ---- */

/* Right: OpenBLAS on B as it is (this thread's rows). */
static void s_right(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    const int64_t rows = a->numel / kk;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < kk; l++)
                s += (double)((const float *)a->data)[i * kk + l] *
                     ((const float *)k->in[1].data)[l * n + j];
            ((float *)y->data)[i * n + j] = (float)s;
        }
}

/* Wrong: right but for one element. */
static void s_wrong(const gx_kargs *k)
{
    s_right(k);
    int64_t lo, hi;
    const gx_view *y = &k->out[0];
    gx_cpu_share(k, y->numel / y->shape[y->ndim - 1], 1, &lo, &hi);
    if (lo < hi)
        ((float *)y->data)[lo * y->shape[y->ndim - 1]] += 0.5f;
}

static const gxd_tune_impl s_fast_wrong = {.name = "test.wrong", .version = 1, .source = "test",
                                           .matmul = s_wrong, .fixed_ns = 1};
static const gxd_tune_impl s_fast_right = {.name = "test.right", .version = 1, .source = "test",
                                           .matmul = s_right, .fixed_ns = 1};

/* ---- a graph: y = x · W, x [S_M, S_K], W constant [S_K, S_N] ---- */

static float s_w[S_K * S_N];

static gx_graph *s_graph(void)
{
    for (int i = 0; i < S_K * S_N; i++)
        s_w[i] = (float)((i * 37) % 17) / 16.0f - 0.5f;
    gx_graph *g = gx_graph_new("tune");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, S_K}), GX_OK);
    gxt_const(g, "w", GX_F32, 2, (int64_t[]){S_K, S_N}, s_w);
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "MatMul", "mm", NAMES("x", "w"), NAMES("y")));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static gxd_plan *s_compile(const gx_graph *g, gxd_tune *t)
{
    char err[512];
    static float x[S_M * S_K];
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {S_M, S_K}, .numel = S_M * S_K, .data = x};
    gxd_compile_limits lim = s_lim0;
    lim.tune = t;
    gxd_plan *p = NULL;
    ck_assert_msg(gxd_compile(g, &in, &lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(p->n_impls, 1);
    return p;
}

/* Run plan and compare with a float64 product. */
static void s_exec_check(const gxd_plan *plan)
{
    char err[512];
    float x[S_M * S_K];
    for (int i = 0; i < S_M * S_K; i++)
        x[i] = (float)(i % 13) / 8.0f - 0.75f;
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {S_M, S_K}, .numel = S_M * S_K, .data = x};
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, plan, arena, &in, &s_lim0, &stop, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_OK);
    const gx_view *y = gxd_frame_output(&f, 0);
    for (int i = 0; i < S_M; i++)
        for (int j = 0; j < S_N; j++) {
            double s = 0;
            for (int l = 0; l < S_K; l++)
                s += (double)x[i * S_K + l] * s_w[l * S_N + j];
            ck_assert_double_eq_tol(((const float *)y->data)[i * S_N + j], s, 1e-4);
        }
    gxd_frame_fini(&f);
    free(arena);
}

/* ---- lookups ---- */

START_TEST(test_lookup_order)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    /* a and b in two families (no prefetch between them: test_prefetch) */
    const gxd_tune_sig a = tt_sig(8, 64, 32), b = tt_sig(16, 64, 48), c = tt_sig(32, 64, 32);
    gxd_tune_rec ra = tt_rec("blas", 100, "here"), rb = tt_rec("plain", 200, "here");
    ck_assert_int_eq(gxd_tune_store(t, &a, &ra), GX_OK);
    ck_assert_int_eq(gxd_tune_store(t, &b, &rb), GX_OK);
    gxd_tune_cache_clear(t); /* b now only in tune.db */
    gxd_tune_rec got[3];
    bool found[3];
    /* a: memory after this; b: tune.db; c: nowhere */
    gxd_tune_lookup_batch(t, &a, 1, got, found);
    ck_assert(found[0]);
    ck_assert_int_eq(got[0].level, GXD_TUNE_LOCAL);
    const gxd_tune_sig batch[3] = {a, b, c};
    gxd_tune_lookup_batch(t, batch, 3, got, found);
    ck_assert(found[0] && found[1] && !found[2]);
    ck_assert_int_eq(got[0].level, GXD_TUNE_MEMORY);
    ck_assert_int_eq(got[1].level, GXD_TUNE_LOCAL);
    ck_assert_str_eq(got[0].impl, "blas");
    ck_assert_str_eq(got[1].impl, "plain");
    ck_assert_int_eq(got[1].ns, 200);
    gxd_tune_lookup_batch(t, batch, 2, got, found); /* both in memory now */
    ck_assert_int_eq(got[0].level, GXD_TUNE_MEMORY);
    ck_assert_int_eq(got[1].level, GXD_TUNE_MEMORY);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.lookups, 6);
    ck_assert_int_eq(st.hits[GXD_TUNE_MEMORY], 3);
    ck_assert_int_eq(st.hits[GXD_TUNE_LOCAL], 2);
    ck_assert_int_eq(st.misses, 1);
    ck_assert_int_eq(st.queued, 0); /* mode cache: misses are not explored */
    ck_assert_int_eq(st.stored, 2);
    ck_assert_int_eq(st.db_errors, 0);
    /* reuse per record: a found 3 times, b twice */
    ck_assert_int_eq(st.n_top, 2);
    ck_assert_str_eq(st.top[0].sig, "MatMul f32 a[8,64] b[64,32] y[8,32] plain");
    ck_assert_str_eq(st.top[0].impl, "blas");
    ck_assert_int_eq(st.top[0].reuse, 3);
    ck_assert_str_eq(st.top[1].impl, "plain");
    ck_assert_int_eq(st.top[1].reuse, 2);
    gxd_tune_destroy(&t);
    ck_assert_ptr_null(t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* The key holds the device model, not the candidates: a record stays
 * found when a candidate is added (test_additive measures it), and is
 * stale once its winner's build id is not this daemon's. */
START_TEST(test_key_builds)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    const gxd_tune_sig a = tt_sig(8, 64, 32), b = tt_sig(8, 64, 48);
    gxd_tune_rec r = tt_rec("blas", 100, "here");
    ck_assert_int_eq(gxd_tune_store(t, &a, &r), GX_OK);
    ck_assert_ptr_nonnull(strstr(gxd_tune_device(t), "isa="));
    ck_assert_ptr_nonnull(strstr(gxd_tune_builds(t), "blas@1=openblas-"));
    const gxd_tune_impl *blas = gxd_tune_impl_find(t, "blas", 1);
    ck_assert_ptr_nonnull(blas);
    ck_assert(!strncmp(blas->build, "openblas-", 9));
    ck_assert_ptr_null(strchr(blas->build, ' '));
    ck_assert(gxd_tune_add_impl(t, &s_fast_right)); /* another candidate */
    ck_assert_ptr_nonnull(strstr(gxd_tune_builds(t), "test.right@1=none"));
    bool found;
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    ck_assert_str_eq(r.impl, "blas");
    ck_assert_str_eq(r.build, blas->build); /* gxd_tune_store filled it */
    gxd_tune_cache_clear(t);
    gxd_tune_lookup_batch(t, &a, 1, &r, &found); /* from tune.db too */
    ck_assert(found);
    ck_assert_int_eq(r.level, GXD_TUNE_LOCAL);
    /* a record of another OpenBLAS build: stale, in memory and tune.db */
    r = tt_rec("blas", 50, "here");
    snprintf(r.build, sizeof r.build, "openblas-0.0.1.Old");
    ck_assert_int_eq(gxd_tune_store(t, &b, &r), GX_OK);
    ck_assert(!gxd_tune_peek(t, &b, &r));
    gxd_tune_lookup_batch(t, &b, 1, &r, &found);
    ck_assert(!found);
    gxd_tune_cache_clear(t);
    gxd_tune_lookup_batch(t, &b, 1, &r, &found);
    ck_assert(!found);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.stale, 2);
    ck_assert_int_eq(st.misses, 2);
    ck_assert_int_eq(st.hits[GXD_TUNE_MEMORY] + st.hits[GXD_TUNE_LOCAL], 2);
    gxd_tune_destroy(&t);
    /* a planted candidate rebuilt (another build id): its record is stale
     * and the plan runs the default */
    gxd_tune_impl v1 = s_fast_right, v2 = s_fast_right;
    snprintf(v1.build, sizeof v1.build, "test-1");
    snprintf(v2.build, sizeof v2.build, "test-2");
    t = s_new(dir, GXD_TUNE_CACHE);
    ck_assert(gxd_tune_add_impl(t, &v1));
    r = tt_rec("test.right", 1, "here");
    const gxd_tune_sig c = tt_sig(S_M, S_K, S_N);
    ck_assert_int_eq(gxd_tune_store(t, &c, &r), GX_OK);
    gx_graph *g = s_graph();
    gxd_plan *p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, "test.right");
    gxd_plan_destroy(&p);
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_CACHE);
    ck_assert(gxd_tune_add_impl(t, &v2));
    p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].source, "default");
    s_exec_check(p);
    gxd_plan_destroy(&p);
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_CACHE); /* v1 again: the record is good again */
    ck_assert(gxd_tune_add_impl(t, &v1));
    p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, "test.right");
    ck_assert_str_eq(p->impls[0].source, "tuned (local)");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A candidate added after a record was made is measured additively: the
 * lookup still finds the stored winner (it keeps running), the signature
 * is queued, and the explorer measures the winner and the new candidate
 * only, keeping the others' times of before. */
static const gxd_tune_impl s_slow_right = {.name = "test.slow", .version = 1, .source = "test",
                                           .matmul = s_right, .fixed_ns = 1000000000000LL};

START_TEST(test_additive)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_EXPLORE);
    const gxd_tune_sig a = tt_sig(S_M, S_K, S_N);
    size_t n_impls = 0, n_mm = 0;
    const gxd_tune_impl *impls = gxd_tune_impls(t, &n_impls);
    for (size_t i = 0; i < n_impls; i++)
        n_mm += impls[i].matmul != NULL;
    gxd_tune_rec r0, r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &a, &r0), GX_OK);
    ck_assert_int_eq(r0.n_cands, (int)n_mm);
    for (int i = 0; i < r0.n_cands; i++) {
        const gxd_tune_impl *im = gxd_tune_impl_find(t, r0.cands[i].name, r0.cands[i].version);
        ck_assert_ptr_nonnull(im);
        ck_assert_str_eq(r0.cands[i].build, im->build);
        ck_assert_int_gt(r0.cands[i].ns, 0);
    }
    bool found;
    gxd_tune_lookup_batch(t, &a, 1, &r, &found); /* complete: nothing to queue */
    ck_assert(found);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 0);
    ck_assert_int_eq(st.queued, 0);

    /* a new candidate, faster: the old winner still runs meanwhile */
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    gx_graph *g = s_graph();
    gxd_plan *p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, r0.impl);
    ck_assert_str_eq(p->impls[0].source, "tuned (memory)");
    gxd_plan_destroy(&p);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 1);
    ck_assert_int_eq(st.queued, 1);
    ck_assert_int_eq(st.misses, 0);
    ck_assert_int_eq(st.pending, 1);
    /* the explorer thread takes it additively */
    ck_assert_int_eq(gxd_tune_explore_start(t), GX_OK);
    ck_assert(gxd_tune_explore_wait(t, 60000));
    gxd_tune_explore_stop(t);
    ck_assert(gxd_tune_peek(t, &a, &r));
    ck_assert_str_eq(r.impl, "test.right");
    ck_assert_str_eq(r.build, "none");
    ck_assert_int_eq(r.n_cands, (int)n_mm + 1);
    ck_assert_ptr_nonnull(strstr(r.others, "test.right@1:1"));
    ck_assert_ptr_nonnull(strstr(r.others, "(earlier)"));
    /* the others but the old winner keep their times of before */
    int kept = 0;
    for (int i = 0; i < r0.n_cands; i++) {
        const gxd_tune_cand *c = gxd_tune_rec_cand(&r, r0.cands[i].name, r0.cands[i].version);
        ck_assert_ptr_nonnull(c);
        if (strcmp(r0.cands[i].name, r0.impl) != 0) {
            ck_assert_int_eq(c->ns, r0.cands[i].ns);
            ck_assert_int_eq(c->at, r0.cands[i].at);
            kept++;
        }
    }
    ck_assert_int_eq(kept, (int)n_mm - 1);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.explored, 2);
    gxd_tune_lookup_batch(t, &a, 1, &r, &found); /* complete again */
    ck_assert(found);
    ck_assert_str_eq(r.impl, "test.right");
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 1);

    /* a new candidate, slower: the winner stays; run on this thread */
    ck_assert(gxd_tune_add_impl(t, &s_slow_right));
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 2);
    int n_run = 0;
    ck_assert_int_eq(gxd_tune_explore_more(t, &a, &r, &n_run), GX_OK);
    ck_assert_int_eq(n_run, 2); /* test.right (the winner) and test.slow */
    ck_assert_str_eq(r.impl, "test.right");
    ck_assert_int_eq(r.n_cands, (int)n_mm + 2);
    ck_assert_int_eq(gxd_tune_rec_cand(&r, "test.slow", 1)->ns, 1000000000000LL);

    /* after a restart, the candidates come back from tune.db */
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    ck_assert(gxd_tune_add_impl(t, &s_slow_right));
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    ck_assert_int_eq(r.level, GXD_TUNE_LOCAL);
    ck_assert_int_eq(r.n_cands, (int)n_mm + 2);
    for (int i = 0; i < r0.n_cands; i++)
        if (strcmp(r0.cands[i].name, r0.impl) != 0)
            ck_assert_int_eq(gxd_tune_rec_cand(&r, r0.cands[i].name, 1)->ns, r0.cands[i].ns);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 0);
    ck_assert_int_eq(st.queued, 0);
    /* without test.slow: nothing lacks either (a record may hold more) */
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.queued, 0);
    /* queued additively, then asked for by TUNE: measured whole */
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    gxd_tune_impl other = s_slow_right;
    snprintf(other.name, sizeof other.name, "test.other");
    ck_assert(gxd_tune_add_impl(t, &other));
    p = s_compile(g, t); /* a hit lacking test.other */
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.additive, 1);
    ck_assert_int_eq(gxd_tune_request_plan(t, p), 1);
    gxd_plan_destroy(&p);
    ck_assert(gxd_tune_explore_wait(t, 60000));
    gxd_tune_explore_stop(t);
    ck_assert(gxd_tune_peek(t, &a, &r));
    ck_assert_str_eq(r.impl, "test.right");
    ck_assert_int_eq(r.n_cands, (int)n_mm + 2); /* test.slow is not this daemon's */
    ck_assert_ptr_null(gxd_tune_rec_cand(&r, "test.slow", 1));
    ck_assert_ptr_null(strstr(r.others, "(earlier)"));
    /* a record whose winner is rebuilt is a miss, explored whole */
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_EXPLORE);
    gxd_tune_impl v2 = s_fast_right;
    snprintf(v2.build, sizeof v2.build, "test-2");
    ck_assert(gxd_tune_add_impl(t, &v2));
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(!found);
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.stale, 1);
    ck_assert_int_eq(st.additive, 0);
    ck_assert_int_eq(st.queued, 1);
    ck_assert_int_eq(gxd_tune_explore_start(t), GX_OK);
    ck_assert(gxd_tune_explore_wait(t, 60000));
    gxd_tune_explore_stop(t);
    ck_assert(gxd_tune_peek(t, &a, &r));
    ck_assert_str_eq(r.impl, "test.right");
    ck_assert_str_eq(r.build, "test-2");
    ck_assert_int_eq(r.n_cands, (int)n_mm + 1); /* measured whole: test.slow is gone */
    ck_assert_ptr_null(strstr(r.others, "(earlier)"));
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A tune.db of schema 2 (keys "sig | device | builds", the builds
 * holding every candidate's name): migrated at open. A record of this
 * daemon's builds is found with its candidates' times; one whose
 * winner's library was another build is stale; of two rows that become
 * one key the newer stays; an unreadable row is dropped. */
static void s_sql(sqlite3 *db, const char *sql)
{
    char *e = NULL;
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &e) == SQLITE_OK, "%s: %s", sql, e ? e : "");
}

START_TEST(test_migrate)
{
    char *dir = gxt_tmpdir(), path[512], sql[16384], sa[256], sb[256], fa[256];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    char device[256];
    snprintf(device, sizeof device, "%s", gxd_tune_device(t));
    gxd_tune_destroy(&t);
    const gxd_tune_sig a = tt_sig(8, 64, 32), b = tt_sig(8, 64, 48), c = tt_sig(16, 64, 32);
    gxd_tune_sig_str(&a, sa, sizeof sa);
    gxd_tune_sig_str(&b, sb, sizeof sb);
    gxd_tune_sig_family_str(&a, fa, sizeof fa);
    gxd_tune_buildinfo bi;
    gxd_tune_buildinfo_now(&bi);
    char now[512], old[512];
    snprintf(now, sizeof now, "gexec-%s gemm=%s [ OpenBLAS %s ] core=%s%s%s packed.%s@1 plain@1 blas@1",
             bi.gexec, bi.isa, bi.openblas, bi.core, bi.onednn[0] ? " onednn=" : "", bi.onednn,
             bi.isa);
    snprintf(old, sizeof old, "gexec-%s gemm=%s [ OpenBLAS 0.0.1 ] core=%s packed.%s@1 blas@1",
             bi.gexec, bi.isa, bi.core, bi.isa);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    s_sql(db, "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
              "CREATE TABLE winners(key TEXT PRIMARY KEY, family TEXT NOT NULL, op TEXT NOT NULL,"
              " impl TEXT NOT NULL, version INTEGER NOT NULL, ns INTEGER NOT NULL,"
              " others TEXT NOT NULL, validation TEXT NOT NULL, host TEXT NOT NULL,"
              " measured_at INTEGER NOT NULL, reuse INTEGER NOT NULL DEFAULT 0);"
              "CREATE INDEX winners_age ON winners(measured_at);"
              "CREATE INDEX winners_family ON winners(family);"
              "INSERT INTO meta VALUES('schema', '2');");
    /* a: this daemon's builds (newest) and another OpenBLAS's (older) */
    snprintf(sql, sizeof sql,
             "INSERT INTO winners VALUES('%s | %s | %s', '%s | %s | %s', 'MatMul', 'blas', 1, 100,"
             " 'plain@1:rejected (y[0,1] = 2 vs 3 (off), tol 1e-5), packed.%s@1:300, blas@1:100',"
             " 'rows', 'there', 1700000200, 7);"
             "INSERT INTO winners VALUES('%s | %s | %s', '%s | %s | %s', 'MatMul', 'packed.%s', 1,"
             " 90, 'packed.%s@1:90, blas@1:95', 'rows', 'there', 1700000100, 1);",
             sa, device, now, fa, device, now, bi.isa, sa, device, old, fa, device, old, bi.isa,
             bi.isa);
    s_sql(db, sql);
    /* b: blas won with an older OpenBLAS; c: unreadable */
    snprintf(sql, sizeof sql,
             "INSERT INTO winners VALUES('%s | %s | %s', 'f | %s | %s', 'MatMul', 'blas', 1, 50,"
             " 'packed.%s@1:80, blas@1:50', 'rows', 'there', 1700000000, 0);"
             "INSERT INTO winners VALUES('junk', 'junk', 'MatMul', 'blas', 1, 50, 'x', 'rows',"
             " 'there', 1700000000, 0);",
             sb, device, old, device, old, bi.isa);
    s_sql(db, sql);
    sqlite3_close(db);

    for (int round = 0; round < 2; round++) { /* migrated, then read as it is */
        t = s_new(dir, GXD_TUNE_CACHE);
        gxd_tune_rec r;
        bool found;
        gxd_tune_lookup_batch(t, &a, 1, &r, &found);
        ck_assert(found);
        ck_assert_str_eq(r.impl, "blas");
        ck_assert_int_eq(r.ns, 100);
        ck_assert_str_eq(r.build, gxd_tune_impl_find(t, "blas", 1)->build);
        ck_assert_str_eq(r.host, "there");
        ck_assert_int_eq(r.measured_at, 1700000200);
        ck_assert_int_eq(r.n_cands, 3);
        char packed[32];
        snprintf(packed, sizeof packed, "packed.%s", bi.isa);
        ck_assert_int_eq(gxd_tune_rec_cand(&r, packed, 1)->ns, 300);
        ck_assert_str_eq(gxd_tune_rec_cand(&r, packed, 1)->build,
                         gxd_tune_impl_find(t, packed, 1)->build);
        ck_assert_int_eq(gxd_tune_rec_cand(&r, "plain", 1)->ns, -1);
        ck_assert_str_eq(gxd_tune_rec_cand(&r, "plain", 1)->build,
                         gxd_tune_impl_find(t, "plain", 1)->build);
        ck_assert_int_eq(gxd_tune_rec_cand(&r, "blas", 1)->at, 1700000200);
        ck_assert(gxd_tune_rec_has(&r, gxd_tune_impl_find(t, "blas", 1)));
        gxd_tune_lookup_batch(t, &b, 1, &r, &found);
        ck_assert(!found); /* blas of OpenBLAS 0.0.1 */
        gxd_tune_lookup_batch(t, &c, 1, &r, &found);
        ck_assert(!found);
        gxd_tune_stats st;
        gxd_tune_get_stats(t, &st);
        ck_assert_int_eq(st.stale, 1);
        ck_assert_int_eq(st.hits[GXD_TUNE_LOCAL], 1);
        gxd_tune_destroy(&t);
    }
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (SELECT v FROM meta WHERE k='schema'),"
                                            " count(*), (SELECT reuse FROM winners WHERE ns=100)"
                                            " FROM winners",
                                        -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 3);
    ck_assert_int_eq(sqlite3_column_int(q, 1), 2); /* a (the newer) and b; junk dropped */
    ck_assert_int_eq(sqlite3_column_int(q, 2), 7 + 2); /* a's reuse kept, found twice since */
    sqlite3_finalize(q);
    sqlite3_close(db);
    (void)gxt_sh(sql, sizeof sql, "ls %s | grep -c '^tune.db.corrupt-'", dir);
    ck_assert_int_eq(atoi(sql), 0); /* migrated, not moved aside */
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A lookup that reaches tune.db reads the other batch sizes of the same
 * product into memory with it. */
START_TEST(test_prefetch)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    const gxd_tune_sig a = tt_sig(8, 64, 32), b = tt_sig(16, 64, 32), other = tt_sig(8, 64, 48);
    gxd_tune_rec r = tt_rec("blas", 100, "here");
    ck_assert_int_eq(gxd_tune_store(t, &a, &r), GX_OK);
    r = tt_rec("plain", 200, "here");
    ck_assert_int_eq(gxd_tune_store(t, &b, &r), GX_OK);
    r = tt_rec("plain", 300, "here");
    ck_assert_int_eq(gxd_tune_store(t, &other, &r), GX_OK);
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_CACHE);
    bool found;
    ck_assert(!gxd_tune_peek(t, &b, &r));
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    ck_assert(gxd_tune_peek(t, &b, &r)); /* same family: in memory now */
    ck_assert_str_eq(r.impl, "plain");
    ck_assert(!gxd_tune_peek(t, &other, &r)); /* another N: another family */
    gxd_tune_lookup_batch(t, &b, 1, &r, &found);
    ck_assert(found);
    ck_assert_int_eq(r.level, GXD_TUNE_MEMORY);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.prefetched, 1);
    ck_assert_int_eq(st.hits[GXD_TUNE_LOCAL], 1);
    ck_assert_int_eq(st.hits[GXD_TUNE_MEMORY], 1);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A tune.db of another schema version is moved aside like a corrupt one. */
START_TEST(test_schema_version)
{
    char *dir = gxt_tmpdir(), out[256];
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    gxd_tune_destroy(&t);
    if (gxt_sh(out, sizeof out, "command -v sqlite3 >/dev/null") != 0) { /* no sqlite3 shell */
        fprintf(stderr, "tune: test_schema_version skipped: no sqlite3 command\n");
        gxt_rmtree(dir);
        free(dir);
        return;
    }
    ck_assert_int_eq(gxt_sh(out, sizeof out, "sqlite3 %s/tune.db \"update meta set v='99' where k='schema'\"", dir), 0);
    gxd_log lg;
    gxd_log_init(&lg, GXD_LOG_ERROR);
    char err[256];
    gxd_tune_opts o = {.mode = GXD_TUNE_CACHE, .dir = dir, .log = &lg};
    t = gxd_tune_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(t);
    gxd_tune_destroy(&t);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls %s | grep -c '^tune.db.corrupt-'", dir), 0);
    ck_assert_int_eq(atoi(out), 1);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_persist)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    const gxd_tune_sig a = tt_sig(8, 64, 32);
    gxd_tune_rec r = tt_rec("packed.baseline", 1234, "here");
    ck_assert_int_eq(gxd_tune_store(t, &a, &r), GX_OK);
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_CACHE); /* a restart */
    gxd_tune_rec got;
    bool found;
    gxd_tune_lookup_batch(t, &a, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.level, GXD_TUNE_LOCAL);
    ck_assert_str_eq(got.impl, "packed.baseline");
    ck_assert_int_eq(got.version, 1);
    ck_assert_int_eq(got.ns, 1234);
    ck_assert_str_eq(got.others, r.others);
    ck_assert_str_eq(got.validation, "test");
    ck_assert_str_eq(got.host, "here");
    ck_assert_int_eq(got.measured_at, 1700000000);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A registry killed without closing (a child process _exits after its
 * store): tune.db is valid and holds the record. */
START_TEST(test_persist_killed)
{
    char *dir = gxt_tmpdir();
    const gxd_tune_sig a = tt_sig(8, 64, 32);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
        gxd_tune_rec r = tt_rec("blas", 77, "here");
        _exit(gxd_tune_store(t, &a, &r) == GX_OK ? 0 : 1); /* no destroy, no close */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gxd_tune *t = s_new(dir, GXD_TUNE_CACHE);
    gxd_tune_rec got;
    bool found;
    gxd_tune_lookup_batch(t, &a, 1, &got, &found);
    ck_assert(found);
    ck_assert_int_eq(got.ns, 77);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_corrupt)
{
    char *dir = gxt_tmpdir();
    char path[4200], out[4096];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not an SQLite database\n", f);
    fclose(f);
    gxd_log lg;
    gxd_log_init(&lg, GXD_LOG_ERROR); /* the move is a warning: quiet here */
    char err[256];
    gxd_tune_opts o = {.mode = GXD_TUNE_CACHE, .dir = dir, .log = &lg};
    gxd_tune *t = gxd_tune_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(t);
    const gxd_tune_sig a = tt_sig(8, 64, 32);
    gxd_tune_rec r = tt_rec("blas", 5, "here");
    ck_assert_int_eq(gxd_tune_store(t, &a, &r), GX_OK); /* the new database works */
    gxd_tune_destroy(&t);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls %s | grep -c '^tune.db.corrupt-'", dir), 0);
    ck_assert_int_eq(atoi(out), 1);
    t = s_new(dir, GXD_TUNE_CACHE);
    bool found;
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(found);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_mode_off)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_OFF);
    const gxd_tune_sig a = tt_sig(8, 64, 32);
    gxd_tune_rec r = tt_rec("blas", 5, "here");
    bool found = true;
    gxd_tune_lookup_batch(t, &a, 1, &r, &found);
    ck_assert(!found);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.lookups, 0);
    gxd_tune_destroy(&t);
    ck_assert_int_ne(access(dir, F_OK), -1);
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    ck_assert_int_eq(access(path, F_OK), -1); /* off: no database made */
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_config)
{
    gxd_config c;
    char err[256];
    gxd_config_init(&c);
    ck_assert_str_eq(c.tune_mode, "explore");
    ck_assert_int_eq(c.tune_budget_ms, 100);
    ck_assert_int_eq(gxd_config_set(&c, "tune.mode", "cache", err, sizeof err), GX_OK);
    ck_assert_str_eq(c.tune_mode, "cache");
    ck_assert_int_eq(gxd_config_set(&c, "tune.mode", "fast", err, sizeof err), GX_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err, "not off, cache or explore"));
    ck_assert_int_eq(gxd_config_set(&c, "tune.budget_ms", "0", err, sizeof err), GX_ECONFIG);
    ck_assert_int_eq(gxd_config_set(&c, "tune.budget_ms", "250", err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_config_set(&c, "tune.dir", "relative", err, sizeof err), GX_ECONFIG);
    gxd_config_fini(&c);
}
END_TEST

/* ---- exploration ---- */

/* The real candidates of this CPU all pass the check and are timed. */
START_TEST(test_explore_builtin)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_EXPLORE);
    gxd_tune_sig s = tt_sig(5, 40, 37); /* odd sizes: partial panels */
    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
    size_t n;
    const gxd_tune_impl *im = gxd_tune_impls(t, &n);
    for (size_t i = 0; i < n; i++) {
        char want[64];
        snprintf(want, sizeof want, "%s@%d:", im[i].name, im[i].version);
        /* every MatMul candidate, no other */
        ck_assert_msg((strstr(r.others, want) != NULL) == (im[i].matmul != NULL),
                      "%s in %s", want, r.others);
    }
    ck_assert_ptr_null(strstr(r.others, "rejected"));
    ck_assert_ptr_nonnull(gxd_tune_impl_find(t, r.impl, r.version));
    ck_assert_int_gt(r.ns, 0);
    /* Gemm with transB, alpha, beta and a row of C */
    memset(&s, 0, sizeof s);
    s.op = GX_OP_GEMM;
    s.a_ndim = 2;
    s.a_shape[0] = s.m = 9;
    s.a_shape[1] = s.k = 20;
    s.n = 18;
    s.trans_b = true;
    s.alpha = 0.5f;
    s.beta = 2.0f;
    s.c_ndim = 1;
    s.c_shape[0] = 18;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
    ck_assert_ptr_null(strstr(r.others, "rejected"));
    ck_assert_ptr_nonnull(strstr(r.others, "blas@1:"));
    ck_assert_ptr_null(strstr(r.others, "plain@1")); /* not a Gemm kernel */
    gxd_tune_destroy(&t);
}
END_TEST

START_TEST(test_fast_wrong_rejected)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_wrong));
    gxd_tune_sig s = tt_sig(S_M, S_K, S_N);
    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
    ck_assert_str_ne(r.impl, "test.wrong");
    ck_assert_ptr_nonnull(strstr(r.others, "test.wrong@1:rejected (y["));
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.rejected, 1);
    ck_assert_int_eq(st.explored, 1);
    ck_assert_int_eq(st.stored, 1);
    ck_assert_int_eq(st.n_wins, 1);
    ck_assert_int_eq(st.wins[0].n, 1);
    ck_assert(!strcmp(st.wins[0].source, "gexec") || !strcmp(st.wins[0].source, "openblas"));
    /* the stored record keeps the reason */
    gxd_tune_cache_clear(t);
    bool found;
    gxd_tune_lookup_batch(t, &s, 1, &r, &found);
    ck_assert(found);
    ck_assert_ptr_nonnull(strstr(r.others, "test.wrong@1:rejected"));
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A planted faster valid candidate wins; the next compile runs it, the
 * plan compiled before is stale for the re-planner. */
START_TEST(test_fast_right_wins)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_wrong));
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    gx_graph *g = s_graph();
    gxd_plan *old = s_compile(g, t); /* a miss: the default, and queued */
    ck_assert_str_eq(old->impls[0].source, "default");
    ck_assert_str_eq(old->impls[0].impl, gxd_tune_default(t, GX_OP_MATMUL)->name);
    ck_assert_ptr_nonnull(old->impls[0].sig);
    s_exec_check(old);
    char why[512] = "";
    ck_assert(!gxd_tune_plan_stale(old, NULL, why, sizeof why));
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.misses, 1);
    ck_assert_int_eq(st.queued, 1);

    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, old->impls[0].sig, &r), GX_OK);
    ck_assert_str_eq(r.impl, "test.right");
    ck_assert_int_eq(r.ns, 1);
    ck_assert_ptr_nonnull(strstr(r.others, "test.wrong@1:rejected"));
    ck_assert(gxd_tune_plan_stale(old, NULL, why, sizeof why));
    ck_assert_msg(strstr(why, "'mm' (MatMul): tuned test.right@1") != NULL, "%s", why);

    gxd_plan *p = s_compile(g, t); /* the re-plan (or next compile) */
    ck_assert_str_eq(p->impls[0].impl, "test.right");
    ck_assert_str_eq(p->impls[0].source, "tuned (memory)");
    ck_assert_int_eq(p->impls[0].ns, 1);
    ck_assert_uint_eq(p->n_prepared, 0); /* it reads B as it is: nothing packed */
    bool runs = false;
    for (size_t i = 0; i < p->n_steps; i++)
        runs |= p->steps[i].kernel == s_right;
    ck_assert(runs);
    ck_assert(!gxd_tune_plan_stale(p, NULL, why, sizeof why));
    s_exec_check(p);
    char *json = gxd_plan_explain_json(p, g);
    ck_assert_ptr_nonnull(json);
    ck_assert_msg(strstr(json, "\"implementations\":[{\"node\":\"mm\",\"op\":\"MatMul\","
                               "\"impl\":\"test.right\",\"version\":1,\"source\":\"tuned (memory)\"") != NULL,
                  "%s", json);
    free(json);
    gxd_plan_destroy(&p);

    /* after a restart the record comes from tune.db */
    gxd_tune_destroy(&t);
    t = s_new(dir, GXD_TUNE_CACHE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_wrong));
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, "test.right");
    ck_assert_str_eq(p->impls[0].source, "tuned (local)");
    s_exec_check(p);
    gxd_plan_destroy(&p);
    gxd_plan_destroy(&old);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Right, after a 20 ms wait: a candidate whose thread loses the core
 * (another process's load) for that long. */
#define S_WAIT_NS (20 * 1000 * 1000)
static void s_waits(const gx_kargs *k)
{
    struct timespec ts = {0, S_WAIT_NS};
    while (nanosleep(&ts, &ts) != 0)
        ;
    s_right(k);
}

static const gxd_tune_impl s_waiting = {.name = "test.waits", .version = 1, .source = "test",
                                        .matmul = s_waits};

/* Candidates are timed by the explorer thread's CPU time: a wait of
 * 20 ms per run (as while another process has the core) is not counted,
 * so the candidate is not charged for load that came while it ran. */
START_TEST(test_cpu_time)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_waiting));
    gxd_tune_sig s = tt_sig(S_M, S_K, S_N);
    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
    const gxd_tune_cand *c = gxd_tune_rec_cand(&r, "test.waits", 1);
    ck_assert_ptr_nonnull(c);
    ck_assert_msg(c->ns > 0 && c->ns < S_WAIT_NS / 2, "%lld ns (%s)", (long long)c->ns, r.others);
    gxd_tune_destroy(&t);
}
END_TEST

/* A record naming a packed kernel on another ISA: the plan packs B and
 * runs that ISA's kernel. */
START_TEST(test_packed_winner)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    gx_graph *g = s_graph();
    gxd_tune_sig s = tt_sig(S_M, S_K, S_N);
    gxd_tune_rec r = tt_rec("packed.baseline", 10, "here");
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    gxd_plan *p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, "packed.baseline");
    ck_assert_uint_eq(p->n_prepared, 1);
    bool runs = false;
    for (size_t i = 0; i < p->n_steps; i++)
        runs |= p->steps[i].kernel == gx_cpu_gemm_packed_kernel_isa(GX_OP_MATMUL, "baseline");
    ck_assert(runs);
    s_exec_check(p);
    gxd_plan_destroy(&p);
    /* no registry: today's default, recorded for explain */
    p = s_compile(g, NULL);
    char want[32];
    snprintf(want, sizeof want, "packed.%s", gx_cpu_gemm_isa());
    ck_assert_str_eq(p->impls[0].impl, want);
    ck_assert_str_eq(p->impls[0].source, "default");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
}
END_TEST

/* A plan read from an artifact runs its choices only while the registry
 * still names them: read back with the record it was compiled with, it is
 * used, its choice with its signature (so the re-planner checks it as a
 * compiled plan's); after another winner is stored the file is refused as
 * stale, saying which step and which implementations. */
START_TEST(test_artifact_choices)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    gx_graph *g = s_graph();
    gx_graph_id id;
    gx_wire_graph_id(g, &id);
    gxd_tune_sig s = tt_sig(S_M, S_K, S_N);
    gxd_tune_rec r = tt_rec("packed.baseline", 10, "here");
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    gxd_plan *p = s_compile(g, t), *q = NULL;
    ck_assert_str_eq(p->impls[0].impl, "packed.baseline");
    char err[512], why[512] = "";
    void *buf = NULL;
    size_t len = 0;
    ck_assert_msg(gxd_artifact_write(p, g, id.hex, &buf, &len, err, sizeof err) == GX_OK, "%s",
                  err);
    gxd_compile_limits lim = s_lim0;
    lim.tune = t;
    ck_assert_msg(gxd_artifact_read(buf, len, g, id.hex, &lim, &q, err, sizeof err) == GX_OK, "%s",
                  err);
    ck_assert(q->from_artifact);
    ck_assert_str_eq(q->impls[0].impl, "packed.baseline");
    ck_assert_ptr_nonnull(q->impls[0].sig);
    char a[512], b[512];
    gxd_tune_sig_str(q->impls[0].sig, a, sizeof a);
    gxd_tune_sig_str(p->impls[0].sig, b, sizeof b);
    ck_assert_str_eq(a, b);
    ck_assert_msg(!gxd_tune_plan_stale(q, NULL, why, sizeof why), "%s", why);
    s_exec_check(q);
    gxd_plan_destroy(&q);

    /* another winner: the file is stale */
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    r = tt_rec("test.right", 1, "here");
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    ck_assert_int_eq(gxd_artifact_read(buf, len, g, id.hex, &lim, &q, err, sizeof err),
                     GX_ENOTFOUND);
    ck_assert_ptr_null(q);
    ck_assert_msg(strstr(err, "stale: 'mm' (MatMul) runs packed.baseline@1, the tune registry "
                              "now names test.right@1") != NULL,
                  "%s", err);
    gxd_plan_destroy(&p);
    free(buf);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
}
END_TEST

/* oneDNN's candidate (daemon/tune/impl_dnnl.c): present exactly when
 * built with oneDNN, its version in the build ids; valid on a real shape;
 * each share run on its own thread at once (as gexec's workers run it),
 * each held to one OpenMP thread; the same bits whatever the share
 * count; a record naming it makes the plan run
 * it on B as it is. */
#ifdef HAVE_DNNL
typedef struct s_share {
    gx_kernel_fn f;
    const gx_kargs *k;
    int ith, omp_after;
} s_share;

static void *s_share_run(void *arg)
{
    s_share *sh = arg;
    gx_kargs k = *sh->k;
    k.ith = sh->ith;
    sh->f(&k);
    sh->omp_after = omp_get_max_threads();
    return NULL;
}
#endif

START_TEST(test_dnnl_candidate)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    const gxd_tune_impl *im = gxd_tune_impl_find(t, "dnnl.sgemm", 1);
#ifndef HAVE_DNNL
    ck_assert_ptr_null(im);
    ck_assert_ptr_null(strstr(gxd_tune_builds(t), "onednn-"));
#else
    ck_assert_ptr_nonnull(im);
    ck_assert_str_eq(im->source, "onednn");
    ck_assert(!im->packed);
    ck_assert_ptr_nonnull(im->gemm); /* test_dnnl_gemm */
    ck_assert_ptr_nonnull(strstr(gxd_tune_builds(t), " dnnl.sgemm@1=onednn-"));
    ck_assert(!strncmp(im->build, "onednn-", 7));
    /* the registry's check on a shape of several panels and shares */
    gxd_tune_sig s = tt_sig(37, 300, 130);
    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
    ck_assert_msg(strstr(r.others, "dnnl.sgemm@1:") && !strstr(r.others, "dnnl.sgemm@1:rejected"),
                  "%s", r.others);
    /* 4 shares (a block of rows each) on 4 threads at once against a
     * float64 product */
    enum { M = 200, K = 70, N = 45, NTH = 4 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *y = malloc(sizeof(float) * M * N);
    ck_assert(a && b && y);
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 11) / 8.0f - 0.6f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 7) / 4.0f - 0.7f;
    for (int i = 0; i < M * N; i++)
        y[i] = -1e30f;
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 2, .shape = {M, K}, .numel = M * K, .data = a},
                     {.dtype = GX_F32, .ndim = 2, .shape = {K, N}, .numel = K * N, .data = b}};
    gx_view out = {.dtype = GX_F32, .ndim = 2, .shape = {M, N}, .numel = M * N, .data = y};
    gx_attrval attr[GX_MAX_ATTRS] = {0};
    const gx_kargs k = {.attr = attr, .n_in = 2, .in = in, .n_out = 1, .out = &out, .nth = NTH};
    s_share sh[NTH];
    pthread_t th[NTH];
    for (int i = 0; i < NTH; i++) {
        sh[i] = (s_share){.f = im->matmul, .k = &k, .ith = i, .omp_after = -1};
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_share_run, &sh[i]), 0);
    }
    for (int i = 0; i < NTH; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(sh[i].omp_after, 1);
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double v = 0;
            for (int l = 0; l < K; l++)
                v += (double)a[i * K + l] * b[l * N + j];
            ck_assert_double_eq_tol(y[i * N + j], v, 1e-4);
        }
    /* the same bits in 1, 3 and 150 shares (rows in blocks of its own; a long
     * K, summed in several blocks) */
    enum { M2 = 150, K2 = 1000 };
    float *a2 = malloc(sizeof(float) * M2 * K2), *b2 = malloc(sizeof(float) * K2 * N);
    float *y1 = malloc(sizeof(float) * M2 * N), *y3 = malloc(sizeof(float) * M2 * N);
    ck_assert(a2 && b2 && y1 && y3);
    for (int i = 0; i < M2 * K2; i++)
        a2[i] = (float)((i * 13) % 29) / 9.0f - 1.3f;
    for (int i = 0; i < K2 * N; i++)
        b2[i] = (float)((i * 7) % 31) / 17.0f - 0.8f;
    gx_view in2[2] = {
        {.dtype = GX_F32, .ndim = 2, .shape = {M2, K2}, .numel = M2 * K2, .data = a2},
        {.dtype = GX_F32, .ndim = 2, .shape = {K2, N}, .numel = K2 * N, .data = b2}};
    gx_view o1 = {.dtype = GX_F32, .ndim = 2, .shape = {M2, N}, .numel = M2 * N, .data = y1};
    gx_view o3 = o1;
    o3.data = y3;
    im->matmul(&(gx_kargs){.attr = attr, .n_in = 2, .in = in2, .n_out = 1, .out = &o1, .nth = 1});
    for (int i = 0; i < 3; i++) /* 3 shares, and 150: a row each for a naive split */
        im->matmul(&(gx_kargs){.attr = attr, .n_in = 2, .in = in2, .n_out = 1, .out = &o3,
                               .ith = i, .nth = 3});
    ck_assert_mem_eq(y1, y3, sizeof(float) * M2 * N);
    memset(y3, 0, sizeof(float) * M2 * N);
    for (int i = 0; i < M2; i++)
        im->matmul(&(gx_kargs){.attr = attr, .n_in = 2, .in = in2, .n_out = 1, .out = &o3,
                               .ith = i, .nth = M2});
    ck_assert_mem_eq(y1, y3, sizeof(float) * M2 * N);
    free(a2);
    free(b2);
    free(y1);
    free(y3);
    free(a);
    free(b);
    free(y);
    /* a record naming it: the plan runs it, nothing packed */
    gx_graph *g = s_graph();
    s = tt_sig(S_M, S_K, S_N);
    r = tt_rec("dnnl.sgemm", 10, "here");
    ck_assert_int_eq(gxd_tune_store(t, &s, &r), GX_OK);
    gxd_plan *p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].impl, "dnnl.sgemm");
    ck_assert_uint_eq(p->n_prepared, 0);
    bool runs = false;
    for (size_t i = 0; i < p->n_steps; i++)
        runs |= p->steps[i].kernel == im->matmul;
    ck_assert(runs);
    s_exec_check(p);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
#endif
    gxd_tune_destroy(&t);
}
END_TEST

/* dnnl.sgemm for Gemm: valid (the registry's float64 check) with transB,
 * alpha, beta and every form of C, over several blocks of rows; the same
 * bits in 1, 3 and 150 shares. */
START_TEST(test_dnnl_gemm)
{
#ifndef HAVE_DNNL
    fprintf(stderr, "tune: test_dnnl_gemm: built without oneDNN, nothing to test\n");
#else
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    const gxd_tune_impl *im = gxd_tune_impl_find(t, "dnnl.sgemm", 1);
    ck_assert_ptr_nonnull(im);
    ck_assert_ptr_nonnull(gxd_tune_impl_kernel(im, GX_OP_GEMM));
    enum { M = 150, K = 70, N = 45 };
    const struct {
        bool tb;
        float alpha, beta;
        int c_ndim;
        int64_t c0, c1;
    } cases[] = {
        {false, 1.0f, 1.0f, -1, 0, 0}, {true, 0.5f, 2.0f, 1, N, 0}, {false, 1.5f, -1.0f, 0, 0, 0},
        {true, 1.0f, 0.5f, 2, M, N},   {false, 2.0f, 1.0f, 2, 1, N}, {true, -1.0f, 3.0f, 2, M, 1},
        {false, 1.0f, 0.0f, 1, N, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gxd_tune_sig s = tt_sig(M, K, N);
        s.op = GX_OP_GEMM;
        s.trans_b = cases[c].tb;
        s.alpha = cases[c].alpha;
        s.beta = cases[c].beta;
        s.c_ndim = cases[c].c_ndim;
        s.c_shape[0] = cases[c].c0;
        s.c_shape[1] = cases[c].c1;
        gxd_tune_rec r;
        ck_assert_int_eq(gxd_tune_explore_sig(t, &s, &r), GX_OK);
        ck_assert_msg(strstr(r.others, "dnnl.sgemm@1:") && !strstr(r.others, "dnnl.sgemm@1:rejected"),
                      "case %zu: %s", c, r.others);
        ck_assert(gxd_tune_rec_cand(&r, "dnnl.sgemm", 1) != NULL);
    }
    /* the same bits in 1, 3 and 150 shares: transB, C [N], K long */
    enum { K2 = 1000 };
    float *a = malloc(sizeof(float) * M * K2), *b = malloc(sizeof(float) * K2 * N);
    float *cv = malloc(sizeof(float) * N);
    float *y1 = malloc(sizeof(float) * M * N), *y3 = malloc(sizeof(float) * M * N);
    ck_assert(a && b && cv && y1 && y3);
    for (int i = 0; i < M * K2; i++)
        a[i] = (float)((i * 13) % 29) / 9.0f - 1.3f;
    for (int i = 0; i < K2 * N; i++)
        b[i] = (float)((i * 7) % 31) / 17.0f - 0.8f;
    for (int i = 0; i < N; i++)
        cv[i] = (float)i / 7.0f - 2.0f;
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 2, .shape = {M, K2}, .numel = M * K2, .data = a},
                     {.dtype = GX_F32, .ndim = 2, .shape = {N, K2}, .numel = K2 * N, .data = b},
                     {.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = cv}};
    gx_view o1 = {.dtype = GX_F32, .ndim = 2, .shape = {M, N}, .numel = M * N, .data = y1};
    gx_view o3 = o1;
    o3.data = y3;
    gx_attrval attr[GX_MAX_ATTRS] = {0};
    attr[GX_GEMM_ALPHA].f = 0.5;
    attr[GX_GEMM_BETA].f = 2.0;
    attr[GX_GEMM_TRANSB].i = 1;
    im->gemm(&(gx_kargs){.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &o1, .nth = 1});
    for (int i = 0; i < M; i += 37) /* spot rows against float64 */
        for (int j = 0; j < N; j++) {
            double v = 0;
            for (int l = 0; l < K2; l++)
                v += (double)a[i * K2 + l] * b[j * K2 + l];
            v = 0.5 * v + 2.0 * cv[j];
            ck_assert_double_eq_tol(y1[i * N + j], v, 1e-3);
        }
    for (int i = 0; i < 3; i++)
        im->gemm(&(gx_kargs){.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &o3, .ith = i,
                             .nth = 3});
    ck_assert_mem_eq(y1, y3, sizeof(float) * M * N);
    memset(y3, 0, sizeof(float) * M * N);
    for (int i = 0; i < M; i++)
        im->gemm(&(gx_kargs){.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &o3, .ith = i,
                             .nth = M});
    ck_assert_mem_eq(y1, y3, sizeof(float) * M * N);
    free(a);
    free(b);
    free(cv);
    free(y1);
    free(y3);
    gxd_tune_destroy(&t);
#endif
}
END_TEST

/* ---- Conv (docs/tune.md "Conv") ---- */

/* A graph: y = Relu(Conv(x, W, bias) + r), x [S_CN, S_CC, S_CH, S_CW]
 * (1-D: [S_CN, S_CC, S_CW]), W constant, r a second input of y's shape:
 * the Add and Relu are the Conv's epilogue when it is fused. */
#define S_CN 2
#define S_CC 8
#define S_CM 24
#define S_CH 9
#define S_CW 11

static float s_cw[S_CM * S_CC * 9], s_cb[S_CM];
static atomic_int s_conv_calls;

/* Right: gexec's Conv kernel, counted. */
static void s_conv_right(const gx_kargs *k)
{
    atomic_fetch_add(&s_conv_calls, 1);
    gx_cpu_CONV(k);
}

/* Wrong: right but for y[0], changed by the last share (the registry runs
 * shares one after the other: nothing writes y[0] after it). */
static void s_conv_wrong(const gx_kargs *k)
{
    gx_cpu_CONV(k);
    if (k->ith == k->nth - 1)
        ((float *)k->out[0].data)[0] += 0.25f;
}

/* The planted candidates' scratch: 1 MiB, more than gexec's kernel needs
 * on these shapes (its im2col columns), and not what its schema asks. */
static int64_t s_conv_scratch(const gxd_tune_sig *sig)
{
    return sig->op == GX_OP_CONV ? (int64_t)1 << 20 : -1;
}

static const gxd_tune_impl s_conv_fast_wrong = {.name = "test.cwrong", .version = 1,
                                                .source = "test", .conv = s_conv_wrong,
                                                .scratch = s_conv_scratch, .fixed_ns = 1};
static const gxd_tune_impl s_conv_fast_right = {.name = "test.cright", .version = 1,
                                                .source = "test", .conv = s_conv_right,
                                                .scratch = s_conv_scratch, .fixed_ns = 1};

/* nsp 1 or 2 spatial dims; group g; residual: the Add and Relu after. */
static gx_graph *s_conv_graph(int nsp, int64_t g, bool residual)
{
    for (int i = 0; i < S_CM * S_CC * 9; i++)
        s_cw[i] = (float)((i * 37) % 23) / 16.0f - 0.7f;
    for (int i = 0; i < S_CM; i++)
        s_cb[i] = (float)(i % 5) / 4.0f - 0.5f;
    gx_graph *gr = gx_graph_new("conv");
    const int64_t xs[4] = {S_CN, S_CC, nsp == 1 ? S_CW : S_CH, S_CW};
    const int64_t ws[4] = {S_CM, S_CC / g, 3, 3};
    ck_assert_int_eq(gx_graph_add_input(gr, "x", GX_F32, nsp + 2, xs), GX_OK);
    gxt_const(gr, "w", GX_F32, nsp + 2, ws, s_cw);
    gxt_const(gr, "b", GX_F32, 1, (int64_t[]){S_CM}, s_cb);
    gx_node *c = gx_graph_add_node(gr, "Conv", "conv", NAMES("x", "w", "b"),
                                   NAMES(residual ? "c" : "y"));
    ck_assert_ptr_nonnull(c);
    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {1, 2};
    ck_assert_int_eq(gx_node_set_ints(c, "pads", pads, 2 * (size_t)nsp), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(c, "strides", strides + 2 - nsp, (size_t)nsp), GX_OK);
    ck_assert_int_eq(gx_node_set_int(c, "group", g), GX_OK);
    if (residual) {
        const int64_t ys[4] = {S_CN, S_CM, nsp == 1 ? (S_CW + 1) / 2 : S_CH, (S_CW + 1) / 2};
        ck_assert_int_eq(gx_graph_add_input(gr, "r", GX_F32, nsp + 2, ys), GX_OK);
        ck_assert_ptr_nonnull(gx_graph_add_node(gr, "Add", "add", NAMES("c", "r"), NAMES("s")));
        ck_assert_ptr_nonnull(gx_graph_add_node(gr, "Relu", "relu", NAMES("s"), NAMES("y")));
    }
    ck_assert_int_eq(gx_graph_add_output(gr, "y"), GX_OK);
    return gr;
}

/* The inputs of s_conv_graph(nsp, ...): x and r (filled). */
static void s_conv_inputs(int nsp, gx_view in[2], float *x, float *r)
{
    const int64_t h = nsp == 1 ? 1 : S_CH, oh = nsp == 1 ? 1 : S_CH, ow = (S_CW + 1) / 2;
    for (int64_t i = 0; i < S_CN * S_CC * h * S_CW; i++)
        x[i] = (float)((i * 13) % 29) / 9.0f - 1.4f;
    for (int64_t i = 0; i < S_CN * S_CM * oh * ow; i++)
        r[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    in[0] = (gx_view){.dtype = GX_F32, .ndim = nsp + 2, .shape = {S_CN, S_CC, h, S_CW},
                      .numel = S_CN * S_CC * h * S_CW, .data = x};
    in[1] = (gx_view){.dtype = GX_F32, .ndim = nsp + 2, .shape = {S_CN, S_CM, oh, ow},
                      .numel = S_CN * S_CM * oh * ow, .data = r};
    if (nsp == 1) {
        in[0].shape[2] = S_CW;
        in[1].shape[2] = ow;
    }
}

static gxd_plan *s_conv_compile(const gx_graph *g, int nsp, gxd_tune *t)
{
    char err[512];
    static float x[S_CN * S_CC * S_CH * S_CW], r[S_CN * S_CM * S_CH * S_CW];
    gx_view in[2];
    s_conv_inputs(nsp, in, x, r);
    gxd_compile_limits lim = s_lim0;
    lim.tune = t;
    lim.no_layout = true; /* plain: what the registry tunes */
    gxd_plan *p = NULL;
    ck_assert_msg(gxd_compile(g, in, &lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(p->n_impls, 1);
    ck_assert_int_eq(p->impls[0].op, GX_OP_CONV);
    return p;
}

/* Run plan on s_conv_inputs and compare y with a float64 reference of
 * Relu(Conv + bias + r) (residual) or Conv + bias, within tol. */
static void s_conv_exec_check(const gxd_plan *plan, int nsp, int64_t g, bool residual, double tol)
{
    char err[512];
    static float x[S_CN * S_CC * S_CH * S_CW], r[S_CN * S_CM * S_CH * S_CW];
    gx_view in[2];
    s_conv_inputs(nsp, in, x, r);
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, plan, arena, in, &s_lim0, &stop, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_OK);
    const gx_view *y = gxd_frame_output(&f, 0);
    const int64_t h = nsp == 1 ? 1 : S_CH, oh = h, ow = (S_CW + 1) / 2, cg = S_CC / g,
                  mg = S_CM / g, kh = nsp == 1 ? 1 : 3;
    ck_assert_int_eq(y->numel, S_CN * S_CM * oh * ow);
    for (int64_t n = 0; n < S_CN; n++)
        for (int64_t m = 0; m < S_CM; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double v = s_cb[m];
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t a = 0; a < kh; a++)
                            for (int64_t b = 0; b < 3; b++) {
                                const int64_t xi = nsp == 1 ? 0 : i - 1 + a, xj = j * 2 - 1 + b;
                                if (xi < 0 || xi >= h || xj < 0 || xj >= S_CW)
                                    continue;
                                v += (double)x[((n * S_CC + m / mg * cg + c) * h + xi) * S_CW +
                                               xj] *
                                     s_cw[((m * cg + c) * kh + a) * 3 + b];
                            }
                    const int64_t o = ((n * S_CM + m) * oh + i) * ow + j;
                    if (residual) {
                        v += r[o];
                        v = v > 0 ? v : 0;
                    }
                    ck_assert_msg(fabs(((const float *)y->data)[o] - v) <= tol,
                                  "y[%lld] = %.9g, reference %.9g", (long long)o,
                                  (double)((const float *)y->data)[o], v);
                }
    gxd_frame_fini(&f);
    free(arena);
}

/* The step running the Conv: its kernel (fused: the group's head's). */
static const gxd_step *s_conv_step(const gxd_plan *p, bool *fused_head)
{
    *fused_head = false;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->op == GX_OP_CONV && !s->fused)
            return s;
        if (s->fused && s->fused->has_head && s->fused->head.op == GX_OP_CONV) {
            *fused_head = true;
            return s;
        }
    }
    return NULL;
}

/* A Conv signature is explored: every built-in candidate (gexec's, and
 * oneDNN's when built with it) validated and timed on 2-D, strided 1-D
 * and grouped shapes; a miss at compile time runs gexec's kernel and is
 * queued. */
START_TEST(test_conv_explore)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_EXPLORE);
    ck_assert_ptr_nonnull(gxd_tune_impl_find(t, "conv.plain", 1));
    ck_assert_str_eq(gxd_tune_default(t, GX_OP_CONV)->name, "conv.plain");
    const struct {
        int nsp;
        int64_t g;
    } cases[] = {{2, 1}, {1, 1}, {2, 4}, {2, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_graph *g = s_conv_graph(cases[c].nsp, cases[c].g, false);
        gxd_plan *p = s_conv_compile(g, cases[c].nsp, t);
        ck_assert_str_eq(p->impls[0].source, "default");
        ck_assert_str_eq(p->impls[0].impl, "conv.plain");
        ck_assert_ptr_nonnull(p->impls[0].sig);
        char sig[512];
        gxd_tune_sig_str(p->impls[0].sig, sig, sizeof sig);
        ck_assert_msg(!strncmp(sig, "Conv f32 x[2,8,", 15) && strstr(sig, " bias plain"), "%s",
                      sig);
        gxd_tune_rec r;
        ck_assert_int_eq(gxd_tune_explore_sig(t, p->impls[0].sig, &r), GX_OK);
        ck_assert_msg(strstr(r.others, "conv.plain@1:") && !strstr(r.others, "rejected"),
                      "%s: %s", sig, r.others);
#ifdef HAVE_DNNL
        ck_assert_msg(strstr(r.others, "dnnl.conv@1:"), "%s: %s", sig, r.others);
#else
        ck_assert_ptr_null(strstr(r.others, "dnnl.conv"));
#endif
        ck_assert_ptr_nonnull(strstr(r.validation, "C/group*taps"));
        /* the next compile runs the winner, right */
        gxd_plan *q = s_conv_compile(g, cases[c].nsp, t);
        ck_assert_str_eq(q->impls[0].impl, r.impl);
        ck_assert_str_eq(q->impls[0].source, "tuned (memory)");
        s_conv_exec_check(q, cases[c].nsp, cases[c].g, false, 1e-4);
        gxd_plan_destroy(&q);
        gxd_plan_destroy(&p);
        gx_graph_destroy(&g);
    }
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.explored, 4);
    ck_assert_int_eq(st.rejected, 0);
    gxd_tune_destroy(&t);
}
END_TEST

/* A planted Conv candidate that is faster but wrong is rejected with its
 * reason stored; a faster right one wins, the next compile runs it (not
 * fused: the Add and Relu run after it as their own group) and the output
 * is right; the plan compiled before is stale. */
START_TEST(test_conv_planted)
{
    char *dir = gxt_tmpdir();
    gxd_tune *t = s_new(dir, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_conv_fast_wrong));
    ck_assert(gxd_tune_add_impl(t, &s_conv_fast_right));
    gx_graph *g = s_conv_graph(2, 1, true);
    gxd_plan *old = s_conv_compile(g, 2, t);
    bool head;
    const gxd_step *cs = s_conv_step(old, &head);
    ck_assert(cs && head); /* the default: the epilogue fused into gexec's kernel */
    s_conv_exec_check(old, 2, 1, true, 1e-4);
    gxd_tune_rec r;
    ck_assert_int_eq(gxd_tune_explore_sig(t, old->impls[0].sig, &r), GX_OK);
    ck_assert_str_eq(r.impl, "test.cright");
    ck_assert_msg(strstr(r.others, "test.cwrong@1:rejected (y[0,0] = "), "%s", r.others);
    char why[512];
    ck_assert(gxd_tune_plan_stale(old, NULL, why, sizeof why));
    ck_assert_msg(strstr(why, "'conv' (Conv): tuned test.cright@1"), "%s", why);
    gxd_tune_destroy(&t);

    /* after a restart, from tune.db */
    t = s_new(dir, GXD_TUNE_CACHE);
    ck_assert(gxd_tune_add_impl(t, &s_conv_fast_wrong));
    ck_assert(gxd_tune_add_impl(t, &s_conv_fast_right));
    bool found;
    gxd_tune_lookup_batch(t, old->impls[0].sig, 1, &r, &found);
    ck_assert(found);
    ck_assert_ptr_nonnull(strstr(r.others, "test.cwrong@1:rejected"));
    gxd_plan *p = s_conv_compile(g, 2, t);
    ck_assert_str_eq(p->impls[0].impl, "test.cright");
    ck_assert_str_eq(p->impls[0].source, "tuned (memory)");
    cs = s_conv_step(p, &head);
    ck_assert(cs && !head);
    ck_assert(cs->kernel == s_conv_right);
    ck_assert_uint_eq(cs->scratch_bytes, (size_t)1 << 20);
    atomic_store(&s_conv_calls, 0);
    s_conv_exec_check(p, 2, 1, true, 1e-4);
    ck_assert_int_gt(atomic_load(&s_conv_calls), 0);
    gxd_plan_destroy(&p);
    gxd_plan_destroy(&old);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* oneDNN's Conv candidate: present exactly when built with it; a record
 * naming it makes the plan run it with the scratch it declares, the output
 * within the registry's tolerance of a float64 reference, the epilogue
 * right (run after it); the same bits in 1, 3, 5 and 40 shares, each share
 * on its own thread held to one OpenMP thread. */
START_TEST(test_dnnl_conv)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    const gxd_tune_impl *im = gxd_tune_impl_find(t, "dnnl.conv", 1);
#ifndef HAVE_DNNL
    ck_assert_ptr_null(im);
#else
    ck_assert_ptr_nonnull(im);
    ck_assert_str_eq(im->source, "onednn");
    ck_assert_ptr_nonnull(strstr(gxd_tune_builds(t), " dnnl.conv@1=onednn-"));
    const struct {
        int nsp;
        int64_t g;
        bool residual;
    } cases[] = {{2, 1, true}, {1, 1, false}, {2, 4, true}, {2, 8, false}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_graph *g = s_conv_graph(cases[c].nsp, cases[c].g, cases[c].residual);
        gxd_plan *p = s_conv_compile(g, cases[c].nsp, t);
        const gxd_tune_sig sig = *p->impls[0].sig;
        gxd_plan_destroy(&p);
        gxd_tune_rec r = tt_rec("dnnl.conv", 10, "here");
        ck_assert_int_eq(gxd_tune_store(t, &sig, &r), GX_OK);
        p = s_conv_compile(g, cases[c].nsp, t);
        ck_assert_str_eq(p->impls[0].impl, "dnnl.conv");
        bool head;
        const gxd_step *cs = s_conv_step(p, &head);
        ck_assert(cs && !head && cs->kernel == im->conv);
        ck_assert_int_eq((int64_t)cs->scratch_bytes, im->scratch(&sig));
        /* a batch of one: no candidate (one block), but a slice of a
         * batch runs it */
        gxd_tune_sig one = sig;
        one.a_shape[0] = 1;
        ck_assert(gxd_tune_impl_takes(im, &sig) && !gxd_tune_impl_takes(im, &one));
        ck_assert_int_ge(im->scratch(&one), 0);
        s_conv_exec_check(p, cases[c].nsp, cases[c].g, cases[c].residual, 1e-4);
        /* shares: the same bits whatever their count */
        const gx_view *xv = &p->values[cs->in[0]].view;
        float *x = malloc(sizeof(float) * (size_t)xv->numel);
        const int64_t yn = p->values[cs->out[0]].view.numel;
        float *y1 = malloc(sizeof(float) * (size_t)yn), *yk = malloc(sizeof(float) * (size_t)yn);
        void *scratch = gx_aligned_alloc((size_t)im->scratch(&sig) + 1);
        ck_assert(x && y1 && yk && scratch);
        for (int64_t i = 0; i < xv->numel; i++)
            x[i] = (float)((i * 31) % 37) / 7.0f - 2.5f;
        gx_view in[3];
        for (int k = 0; k < 3; k++)
            in[k] = p->values[cs->in[k]].view;
        in[0].data = x;
        gx_view o1 = p->values[cs->out[0]].view, ok = o1;
        o1.data = y1;
        ok.data = yk;
        gx_kargs k1 = {.attr = cs->attr, .n_in = 3, .in = in, .n_out = 1, .out = &o1,
                       .scratch = scratch, .nth = 1};
        im->conv(&k1);
        const int nths[] = {3, 5, 40};
        for (size_t q = 0; q < sizeof nths / sizeof nths[0]; q++) {
            memset(yk, 0, sizeof(float) * (size_t)yn);
            gx_kargs kk = k1;
            kk.out = &ok;
            kk.nth = nths[q];
            s_share sh[40];
            pthread_t th[40];
            for (int i = 0; i < nths[q]; i++) {
                sh[i] = (s_share){.f = im->conv, .k = &kk, .ith = i, .omp_after = -1};
                ck_assert_int_eq(pthread_create(&th[i], NULL, s_share_run, &sh[i]), 0);
            }
            for (int i = 0; i < nths[q]; i++) {
                pthread_join(th[i], NULL);
                ck_assert(sh[i].omp_after == 1 || i >= 16); /* beyond the slots: nothing run */
            }
            ck_assert_mem_eq(y1, yk, sizeof(float) * (size_t)yn);
        }
        free(x);
        free(y1);
        free(yk);
        free(scratch);
        gxd_plan_destroy(&p);
        gx_graph_destroy(&g);
    }
#endif
    gxd_tune_destroy(&t);
}
END_TEST

/* The plan of a slice of the batch (replicas) runs what the whole batch's
 * runs, whatever the registry holds for its own rows: the same bits. */
START_TEST(test_slice_follows_whole)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_CACHE);
    gx_graph *g = s_graph();
    gxd_tune_sig whole = tt_sig(S_M, S_K, S_N), half = tt_sig(S_M / 2, S_K, S_N);
    gxd_tune_rec r = tt_rec("blas", 10, "here");
    ck_assert_int_eq(gxd_tune_store(t, &whole, &r), GX_OK);
    r = tt_rec("packed.baseline", 5, "here");
    ck_assert_int_eq(gxd_tune_store(t, &half, &r), GX_OK); /* not used by the slice */
    gxd_plan *p = s_compile(g, t), *q = NULL;
    ck_assert_str_eq(p->impls[0].impl, "blas");
    static float x[S_M * S_K];
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {S_M / 2, S_K}, .numel = S_M / 2 * S_K,
                  .data = x};
    gxd_compile_limits lim = s_lim0;
    lim.tune = t;
    char err[512];
    bool owned = false;
    ck_assert_msg(gxd_plan_slice(p, g, &in, &lim, &q, &owned, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(q->n_impls, 1);
    ck_assert_str_eq(q->impls[0].impl, "blas");
    ck_assert_str_eq(q->impls[0].source, "whole batch");
    if (owned)
        gxd_plan_destroy(&q);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
}
END_TEST

/* The explorer thread: a compile's miss is explored in the background and
 * the next compile finds the winner in memory. */
START_TEST(test_explorer_thread)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_EXPLORE);
    ck_assert(gxd_tune_add_impl(t, &s_fast_right));
    ck_assert_int_eq(gxd_tune_explore_start(t), GX_OK);
    gx_graph *g = s_graph();
    gxd_plan *p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].source, "default");
    gxd_plan_destroy(&p);
    ck_assert(gxd_tune_explore_wait(t, 60000));
    p = s_compile(g, t);
    ck_assert_str_eq(p->impls[0].source, "tuned (memory)");
    ck_assert_str_eq(p->impls[0].impl, "test.right");
    gxd_plan_destroy(&p);
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.explored, 1);
    ck_assert_int_eq(st.pending, 0);
    ck_assert_int_ge(st.explore_us, 0);
    gx_graph_destroy(&g);
    gxd_tune_destroy(&t);
}
END_TEST

/* The explorer waits while the daemon is busy. */
static bool s_busy(void *arg, uint64_t *epoch)
{
    *epoch = 0;
    return !*(atomic_bool *)arg;
}

START_TEST(test_explorer_waits_for_idle)
{
    gxd_tune *t = s_new(NULL, GXD_TUNE_EXPLORE);
    static atomic_bool busy;
    atomic_store(&busy, true);
    gxd_tune_set_idle(t, s_busy, &busy);
    ck_assert_int_eq(gxd_tune_explore_start(t), GX_OK);
    gxd_tune_sig s = tt_sig(S_M, S_K, S_N);
    gxd_tune_rec r;
    bool found;
    gxd_tune_lookup_batch(t, &s, 1, &r, &found); /* queued */
    ck_assert(!gxd_tune_explore_wait(t, 300));    /* busy: nothing measured */
    gxd_tune_stats st;
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.stored, 0);
    atomic_store(&busy, false);
    ck_assert(gxd_tune_explore_wait(t, 60000));
    gxd_tune_get_stats(t, &st);
    ck_assert_int_eq(st.stored, 1);
    gxd_tune_destroy(&t); /* stops the thread */
}
END_TEST

/* ---- a real gexecd ---- */

static gx_client *s_client(const gxt_daemon *d)
{
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    return c;
}

/* The plan's description for x [S_M, S_K] (malloc'ed). */
static char *s_explain(gx_client *c, const gx_graph *g, bool tune)
{
    gx_request *rq = gx_request_new();
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){S_M, S_K});
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    char *json = NULL;
    int rc = tune ? gx_client_tune(c, rq, &json) : gx_client_explain(c, rq, &json);
    ck_assert_msg(rc == GX_OK, "%s", gx_client_last_error(c));
    gx_tensor_destroy(&x);
    gx_request_destroy(&rq);
    return json;
}

/* TUNE on a daemon in mode cache: the signature is explored, the cached
 * plan re-planned to say so, STATS counts it; after a restart the record
 * comes from tune.db. */
START_TEST(test_daemon_tune)
{
    char *dir = gxt_tmpdir(), cfg[4200], out[256];
    snprintf(cfg, sizeof cfg, "%s/c.yaml", dir);
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "tune:\n  mode: cache\n  dir: %s\nprofile:\n  dir: \"\"\ncompiler:\n"
               "  replan_ms: 20\n", dir);
    fclose(f);
    const char *args[] = {"-c", cfg, NULL};
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    gx_client *c = s_client(&d);
    gx_graph *g = s_graph();
    char *json = s_explain(c, g, false);
    ck_assert_msg(strstr(json, "\"impl\":\"packed.") && strstr(json, "\"source\":\"default\""),
                  "%s", json);
    free(json);
    json = s_explain(c, g, true);
    free(json);
    bool tuned = false;
    for (int i = 0; i < 3000 && !tuned; i++) { /* up to a minute */
        json = s_explain(c, g, false);
        tuned = strstr(json, "\"source\":\"tuned (memory)\"") != NULL;
        free(json);
        if (!tuned)
            usleep(20000);
    }
    ck_assert_msg(tuned, "the plan was not re-planned to the tuned choice");
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    ck_assert_msg(strstr(json, "\"tune\":{\"mode\":\"cache\"") && strstr(json, "\"explored\":1,") &&
                      strstr(json, "\"stored\":1,") && strstr(json, "\"rejected\":0,") &&
                      strstr(json, "\"wins\":{\""),
                  "%s", json);
    free(json);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);

    gxt_daemon_start(&d, args); /* a restart */
    c = s_client(&d);
    json = s_explain(c, g, false);
    ck_assert_msg(strstr(json, "\"source\":\"tuned (local)\""), "%s", json);
    free(json);
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    ck_assert_msg(strstr(json, "\"hits_local\":1,"), "%s", json);
    free(json);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "test -s %s/tune.db", dir), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* TUNE when tune.mode is off: a clear error. */
START_TEST(test_daemon_tune_off)
{
    char *dir = gxt_tmpdir(), cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/c.yaml", dir);
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "tune:\n  mode: off\nprofile:\n  dir: \"\"\n");
    fclose(f);
    const char *args[] = {"-c", cfg, NULL};
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    gx_client *c = s_client(&d);
    gx_graph *g = s_graph();
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    char *json = NULL;
    ck_assert_int_eq(gx_client_tune(c, rq, &json), GX_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(gx_client_last_error(c), "tune.mode: off"));
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("registry");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_lookup_order);
    tcase_add_test(tc, test_key_builds);
    tcase_add_test(tc, test_migrate);
    tcase_add_test(tc, test_prefetch);
    tcase_add_test(tc, test_schema_version);
    tcase_add_test(tc, test_persist);
    tcase_add_test(tc, test_persist_killed);
    tcase_add_test(tc, test_corrupt);
    tcase_add_test(tc, test_mode_off);
    tcase_add_test(tc, test_config);
    suite_add_tcase(s, tc);
    tc = tcase_create("explore");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_explore_builtin);
    tcase_add_test(tc, test_dnnl_candidate);
    tcase_add_test(tc, test_dnnl_gemm);
    tcase_add_test(tc, test_conv_explore);
    tcase_add_test(tc, test_conv_planted);
    tcase_add_test(tc, test_dnnl_conv);
    tcase_add_test(tc, test_fast_wrong_rejected);
    tcase_add_test(tc, test_fast_right_wins);
    tcase_add_test(tc, test_additive);
    tcase_add_test(tc, test_packed_winner);
    tcase_add_test(tc, test_artifact_choices);
    tcase_add_test(tc, test_cpu_time);
    tcase_add_test(tc, test_slice_follows_whole);
    tcase_add_test(tc, test_explorer_thread);
    tcase_add_test(tc, test_explorer_waits_for_idle);
    suite_add_tcase(s, tc);
    tc = tcase_create("daemon");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_daemon_tune);
    tcase_add_test(tc, test_daemon_tune_off);
    suite_add_tcase(s, tc);
    return s;
}
