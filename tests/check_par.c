/*
 * The parallel executors (seed 002) without a daemon: the dag pass (edges,
 * width, a buffer layout safe in any order the DAG allows), teams of
 * workers (tests start their own helper threads on a private queue), and
 * every executor configuration (intra-op shares, inter-op DAG order, their
 * combination, replicas) giving the sequential executor's bytes, on random
 * graphs.
 *
 * One exception, by design: a MatMul split into row blocks makes one BLAS
 * call per block, and OpenBLAS's AVX2 kernels (Haswell, Zen) may sum a
 * smaller block in another order. With the AVX-512 kernels (SkylakeX,
 * Cooperlake: what gexecd selects on AVX-512 CPUs) the rows come out the
 * same whatever the split; elsewhere such outputs are compared within float
 * reassociation tolerance.
 */
#include <cblas.h>
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "daemon/team.h"
#include "core/internal.h"
#include "tests/testutil.h"

static const gxd_compile_limits s_lim = {.max_nodes = 10000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

/* ---- random graphs ---- */

static unsigned s_seed;

static unsigned s_rand(void)
{
    s_seed = s_seed * 1103515245u + 12345u;
    return s_seed >> 8;
}

#define ROWS 150
#define COLS 16

/* x [ROWS, COLS] and n random nodes over earlier values: unary and binary
 * elementwise ops, MatMul with a constant [COLS, COLS], a few
 * ReduceSum(axis 1, keepdims) + Add that broadcast, and a few Reshape to
 * [ROWS * COLS], Neg, Reshape back (memplan makes the reshapes views;
 * without reshapes, only the Neg: the same values), and a few Concat of
 * two values along the rows, Reshape to [2, ROWS, COLS] and ReduceMean
 * over the first axis (their inputs written in place in the Concat's
 * output; without reshapes, (a + b) * 0.5: the same bits). Every value no
 * node reads is an output. */
static gx_graph *s_random_graph_ex(int n, bool reshapes)
{
    static const char *const unary[] = {"Relu", "Tanh", "Sigmoid", "Neg", "Abs"};
    static const char *const binary[] = {"Add", "Mul", "Sub", "Max"};
    gx_graph *g = gx_graph_new("random");
    const int64_t shape[2] = {ROWS, COLS};
    ck_assert_int_eq(gx_graph_add_input(g, "v0", GX_F32, 2, shape), GX_OK);
    gx_tensor *w = gx_tensor_new(GX_F32, 2, (const int64_t[]){COLS, COLS});
    float *wd = gx_tensor_data(w);
    for (int i = 0; i < COLS * COLS; i++)
        wd[i] = (float)((int)(s_rand() % 200) - 100) / 400.0f;
    ck_assert_int_eq(gx_graph_add_const(g, "W", &w), GX_OK);
    gx_tensor *flat = gx_tensor_new(GX_I64, 1, (const int64_t[]){1});
    gx_tensor *back = gx_tensor_new(GX_I64, 1, (const int64_t[]){2});
    ((int64_t *)gx_tensor_data(flat))[0] = ROWS * COLS;
    memcpy(gx_tensor_data(back), shape, sizeof shape);
    ck_assert_int_eq(gx_graph_add_const(g, "flat", &flat), GX_OK);
    ck_assert_int_eq(gx_graph_add_const(g, "back", &back), GX_OK);
    gx_tensor *pair = gx_tensor_new(GX_I64, 1, (const int64_t[]){3});
    gx_tensor *half = gx_tensor_new(GX_F32, 0, NULL);
    memcpy(gx_tensor_data(pair), (const int64_t[]){2, ROWS, COLS}, 3 * sizeof(int64_t));
    *(float *)gx_tensor_data(half) = 0.5f;
    ck_assert_int_eq(gx_graph_add_const(g, "pair", &pair), GX_OK);
    ck_assert_int_eq(gx_graph_add_const(g, "half", &half), GX_OK);
    int *readers = calloc((size_t)n + 1, sizeof *readers);
    char name[16], a[16], b[16], t[16];
    for (int i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        int x = (int)(s_rand() % (unsigned)i), y = (int)(s_rand() % (unsigned)i);
        /* favour recent values so chains form, and old ones so branches do */
        if (s_rand() % 2)
            x = i - 1 - (int)(s_rand() % (unsigned)(i < 3 ? i : 3));
        snprintf(a, sizeof a, "v%d", x);
        snprintf(b, sizeof b, "v%d", y);
        readers[x]++;
        unsigned kind = s_rand() % 14;
        const char *out = name;
        if (kind >= 12) {
            char c[16], r[16];
            snprintf(c, sizeof c, "c%d", i);
            snprintf(r, sizeof r, "p%d", i);
            const char *cout = c, *rout = r, *cin[2] = {a, b}, *rin[2] = {c, "pair"};
            const char *hin[2] = {r, "half"};
            readers[y]++;
            if (!reshapes) {
                ck_assert_ptr_nonnull(gx_graph_add_node(g, "Add", NULL, 2, cin, 1, &rout));
                ck_assert_ptr_nonnull(gx_graph_add_node(g, "Mul", NULL, 2, hin, 1, &out));
            } else {
                gx_node *cn = gx_graph_add_node(g, "Concat", NULL, 2, cin, 1, &cout);
                ck_assert_ptr_nonnull(cn);
                ck_assert_int_eq(gx_node_set_int(cn, "axis", 0), GX_OK);
                ck_assert_ptr_nonnull(gx_graph_add_node(g, "Reshape", NULL, 2, rin, 1, &rout));
                gx_node *m = gx_graph_add_node(g, "ReduceMean", NULL, 1, &rout, 1, &out);
                ck_assert_ptr_nonnull(m);
                ck_assert_int_eq(gx_node_set_ints(m, "axes", (const int64_t[]){0}, 1), GX_OK);
                ck_assert_int_eq(gx_node_set_int(m, "keepdims", 0), GX_OK);
            }
        } else if (kind >= 10 && !reshapes) {
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "Neg", NULL, 1, (const char *[]){a}, 1, &out));
        } else if (kind >= 10) {
            char f[16], u[16];
            snprintf(f, sizeof f, "f%d", i);
            snprintf(u, sizeof u, "u%d", i);
            const char *fout = f, *uout = u, *fin[2] = {a, "flat"}, *bin[2] = {u, "back"};
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "Reshape", NULL, 2, fin, 1, &fout));
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "Neg", NULL, 1, &fout, 1, &uout));
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "Reshape", NULL, 2, bin, 1, &out));
        } else if (kind < 4) {
            const char *in = a;
            ck_assert_ptr_nonnull(gx_graph_add_node(g, unary[s_rand() % 5], NULL, 1, &in, 1, &out));
        } else if (kind < 8) {
            const char *in[2] = {a, b};
            readers[y]++;
            ck_assert_ptr_nonnull(gx_graph_add_node(g, binary[s_rand() % 4], NULL, 2, in, 1, &out));
        } else if (kind < 9) {
            const char *in[2] = {a, "W"};
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "MatMul", NULL, 2, in, 1, &out));
        } else {
            snprintf(t, sizeof t, "r%d", i);
            const char *rin = a, *rout = t, *in[2] = {b, t};
            gx_node *r = gx_graph_add_node(g, "ReduceMean", NULL, 1, &rin, 1, &rout);
            ck_assert_ptr_nonnull(r);
            ck_assert_int_eq(gx_node_set_ints(r, "axes", (const int64_t[]){1}, 1), GX_OK);
            readers[y]++;
            ck_assert_ptr_nonnull(gx_graph_add_node(g, "Add", NULL, 2, in, 1, &out));
        }
    }
    for (int i = 1; i <= n; i++)
        if (!readers[i]) {
            snprintf(name, sizeof name, "v%d", i);
            ck_assert_int_eq(gx_graph_add_output(g, name), GX_OK);
        }
    free(readers);
    return g;
}

static gx_graph *s_random_graph(int n)
{
    return s_random_graph_ex(n, true);
}

static gx_view s_input(float *x)
{
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)((int)(s_rand() % 400) - 200) / 100.0f;
    return (gx_view){.dtype = GX_F32, .ndim = 2, .shape = {ROWS, COLS}, .numel = ROWS * COLS,
                     .data = x};
}

/* ---- dag pass ---- */

START_TEST(dag_edges_and_width)
{
    /* x -> a = Relu(x), b = Tanh(x), d = Sigmoid(x); c = Add(a, b) */
    gx_graph *g = gx_graph_new("diamond");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (const int64_t[]){4}), GX_OK);
    const char *x = "x", *a = "a", *b = "b", *c = "c", *d = "d", *ab[2] = {"a", "b"};
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Relu", "A", 1, &x, 1, &a));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Tanh", "B", 1, &x, 1, &b));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Add", "C", 2, ab, 1, &c));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Sigmoid", "D", 1, &x, 1, &d));
    ck_assert_int_eq(gx_graph_add_output(g, "c"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "d"), GX_OK);
    float xd[4] = {0};
    gx_view in = {.dtype = GX_F32, .ndim = 1, .shape = {4}, .numel = 4, .data = xd};
    gxd_plan *p = NULL;
    char err[256];
    gxd_compile_limits lim = s_lim;
    lim.no_fuse = true; /* one step per node (A, B and C would fuse) */
    ck_assert_int_eq(gxd_compile(g, &in, &lim, &p, err, sizeof err), GX_OK);
    ck_assert(p->dag_ok);
    ck_assert_int_eq(p->n_steps, 4);
    int idx[4] = {-1, -1, -1, -1}; /* A B C D */
    for (size_t s = 0; s < p->n_steps; s++)
        idx[p->steps[s].node->name[0] - 'A'] = (int)s;
    ck_assert_int_eq(p->steps[idx[0]].n_preds, 0);
    ck_assert_int_eq(p->steps[idx[1]].n_preds, 0);
    ck_assert_int_eq(p->steps[idx[3]].n_preds, 0);
    ck_assert_int_eq(p->steps[idx[2]].n_preds, 2);
    ck_assert_int_eq(p->steps[idx[0]].n_succ, 1);
    ck_assert_int_eq(p->steps[idx[0]].succ[0], idx[2]);
    ck_assert_int_eq(p->steps[idx[3]].n_succ, 0);
    ck_assert_int_eq(p->width, 3);
    for (size_t s = 0; s < p->n_steps; s++)
        ck_assert(p->steps[s].est_us > 0);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* reach[s][t]: step s finishes before step t starts in every order. */
static bool *s_reach(const gxd_plan *p)
{
    size_t n = p->n_steps;
    bool *r = calloc(n * n + 1, 1);
    for (size_t s = n; s-- > 0;)
        for (int k = 0; k < p->steps[s].n_succ; k++) {
            size_t t = (size_t)p->steps[s].succ[k];
            r[s * n + t] = true;
            for (size_t u = 0; u < n; u++)
                r[s * n + u] |= r[t * n + u];
        }
    return r;
}

/* Steps touching value v's memory (its producer and its readers, and
 * those of every view of it) finish before step def (-1: an input)? */
static bool s_done_before(const gxd_plan *p, const bool *reach, size_t v, int def)
{
    size_t n = p->n_steps;
    const gxd_value *val = &p->values[v];
    if (val->last_use >= (int)n || def < 0)
        return false;
    if (val->def >= 0 && !reach[(size_t)val->def * n + (size_t)def])
        return false;
    const int src = gxd_view_source(p, (int)v);
    for (size_t s = 0; s < n; s++)
        for (int k = 0; k < p->steps[s].n_in; k++)
            if (p->steps[s].in[k] >= 0 && gxd_view_source(p, p->steps[s].in[k]) == src &&
                !reach[s * n + (size_t)def])
                return false;
    return true;
}

/* In the step-order arena, two values live at once share no memory unless
 * one lies in the other's by design (views, Concat inputs in place). */
static void s_assert_step_order_disjoint(const gxd_plan *p)
{
    /* a Concat's output holds its memory from its first input in place on */
    int *def = malloc((p->n_values + 1) * sizeof *def);
    for (size_t v = 0; v < p->n_values; v++)
        def[v] = p->values[v].def;
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].placed_in && p->values[v].def < def[p->values[v].placed_in - 1])
            def[p->values[v].placed_in - 1] = p->values[v].def;
    for (size_t a = 0; a < p->n_values; a++)
        for (size_t b = a + 1; b < p->n_values; b++) {
            const gxd_value *va = &p->values[a], *vb = &p->values[b];
            if (va->kind != GXD_VALUE_TEMP || vb->kind != GXD_VALUE_TEMP || !va->nbytes ||
                !vb->nbytes || gxd_memory_home(p, (int)a) == gxd_memory_home(p, (int)b))
                continue;
            const bool live = def[a] <= vb->last_use && def[b] <= va->last_use;
            const bool mem = va->offset < vb->offset + vb->nbytes &&
                             vb->offset < va->offset + va->nbytes;
            ck_assert_msg(!(live && mem), "values %s and %s share memory while live", va->name,
                          vb->name);
        }
    free(def);
}

START_TEST(dag_layout_never_overlaps_live_values)
{
    s_seed = 7u + (unsigned)_i;
    int views = 0, in_place = 0;
    for (int round = 0; round < 20; round++) {
        gx_graph *g = s_random_graph(10 + (int)(s_rand() % 40));
        float x[ROWS * COLS];
        gx_view in = s_input(x);
        gxd_plan *p = NULL;
        char err[256];
        ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
        ck_assert(p->dag_ok);
        s_assert_step_order_disjoint(p);
        bool *reach = s_reach(p);
        for (size_t a = 0; a < p->n_values; a++)
            for (size_t b = a + 1; b < p->n_values; b++) {
                const gxd_value *va = &p->values[a], *vb = &p->values[b];
                bool placed = (va->kind == GXD_VALUE_INPUT || va->kind == GXD_VALUE_TEMP) &&
                              (vb->kind == GXD_VALUE_INPUT || vb->kind == GXD_VALUE_TEMP);
                if (!placed || !va->nbytes || !vb->nbytes ||
                    gxd_view_source(p, (int)a) == gxd_view_source(p, (int)b))
                    continue; /* a view and its source: one memory by design */
                size_t a0 = p->dag_offset[a], b0 = p->dag_offset[b];
                if (a0 + va->nbytes <= b0 || b0 + vb->nbytes <= a0)
                    continue;
                ck_assert_msg(s_done_before(p, reach, a, vb->def) ||
                                  s_done_before(p, reach, b, va->def),
                              "values %s and %s share memory but may be live at once",
                              va->name, vb->name);
                ck_assert_uint_le(a0 + va->nbytes, p->dag_arena_bytes);
            }
        ck_assert_uint_le(p->dag_arena_bytes, p->naive_bytes);
        for (size_t v = 0; v < p->n_values; v++) {
            views += p->values[v].is_view;
            in_place += p->values[v].placed_in != 0;
        }
        free(reach);
        gxd_plan_destroy(&p);
        gx_graph_destroy(&g);
    }
    ck_assert_int_gt(views, 0);  /* reshapes became views */
    ck_assert_int_gt(in_place, 0); /* Concat inputs were put in place */
}
END_TEST

/* ---- teams ---- */

typedef struct s_count {
    atomic_int calls;
    atomic_int seen; /* bit per member */
    atomic_int work;
} s_count;

static void s_count_fn(void *arg, int member)
{
    s_count *c = arg;
    atomic_fetch_add(&c->calls, 1);
    atomic_fetch_or(&c->seen, 1 << member);
    /* share 1000 units dynamically */
    while (atomic_fetch_add(&c->work, 1) < 1000)
        ;
}

START_TEST(team_leader_alone_finishes)
{
    /* no helper threads at all: the leader does everything */
    gxd_queue q;
    gxd_team t;
    ck_assert_int_eq(gxd_queue_init(&q, 8, 1 << 20), GX_OK);
    gxd_team_init(&t, &q);
    s_count c = {0};
    ck_assert_int_eq(gxd_team_run(&t, 3, s_count_fn, &c), 1);
    ck_assert_int_eq(atomic_load(&c.calls), 1);
    ck_assert_int_eq(atomic_load(&c.seen), 1);
    ck_assert_int_ge(atomic_load(&c.work), 1000);
    ck_assert_int_eq(atomic_load(&t.open_slots), 0);
    gxd_team_fini(&t);
    ck_assert_ptr_null(gxd_queue_close(&q));
    gxd_queue_fini(&q);
}
END_TEST

START_TEST(team_helpers_join_once_each)
{
    gxt_team e;
    gxt_team_start(&e);
    for (int round = 0; round < 200; round++) {
        s_count c = {0};
        int helpers = round % (GXT_HELPERS + 1);
        int members = gxd_team_run(&e.t, helpers, s_count_fn, &c);
        int calls = atomic_load(&c.calls), seen = atomic_load(&c.seen);
        ck_assert_int_eq(members, calls);
        ck_assert_int_ge(calls, 1);
        ck_assert_int_le(calls, helpers + 1);
        ck_assert(seen & 1);
        ck_assert_int_eq(__builtin_popcount((unsigned)seen), calls); /* members distinct */
        ck_assert_int_lt(seen, 1 << (helpers + 1));
        ck_assert_int_eq(atomic_load(&e.t.open_slots), 0);
    }
    gxt_team_stop(&e);
}
END_TEST

/* ---- executors against the sequential one ---- */

typedef struct s_outs {
    size_t n;
    gx_view v[64];
    void *data[64];
} s_outs;

static int s_exec(gxt_team *e, const gxd_plan *p, const gxd_par_cfg *cfg, const gx_view *in,
                  s_outs *o, char *err, size_t errlen)
{
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    size_t bytes = cfg->dag ? p->dag_arena_bytes : p->arena_bytes;
    void *arena = gx_aligned_alloc(bytes + 1);
    memset(arena, 0xA5, bytes); /* stale bytes must never show */
    gxd_frame f;
    int rc = gxd_frame_init_ex(&f, p, arena, cfg->dag, in, &s_lim, &stop, err, errlen);
    if (rc == GX_OK)
        rc = gxd_exec_par(&e->t, cfg, &f, 1, &(int){0}, err, errlen);
    o->n = 0;
    for (size_t i = 0; rc == GX_OK && i < p->n_outputs && i < 64; i++) {
        const gx_view *v = gxd_frame_output(&f, i);
        size_t nb = (size_t)v->numel * gx_dtype_size(v->dtype);
        o->v[i] = *v;
        o->data[i] = malloc(nb + 1);
        memcpy(o->data[i], v->data, nb);
        o->n++;
    }
    gxd_frame_fini(&f);
    free(arena);
    return rc;
}

static void s_outs_free(s_outs *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->data[i]);
    o->n = 0;
}

/* Does this OpenBLAS give the same rows whatever the row blocks? */
static bool s_blas_rows_exact(void)
{
    const char *core = openblas_get_corename();
    return core && (strcasecmp(core, "skylakex") == 0 || strcasecmp(core, "cooperlake") == 0 ||
                    strcasecmp(core, "sapphirerapids") == 0);
}

/* got equals want byte for byte; or, where BLAS may sum in another order,
 * within float reassociation tolerance. */
static bool s_same(const float *got, const float *want, int64_t n)
{
    if (memcmp(got, want, (size_t)n * sizeof *got) == 0)
        return true;
    if (s_blas_rows_exact())
        return false;
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i]))))
            return false;
    return true;
}

static const gxd_par_cfg s_cfgs[] = {
    {.workers = 1},                                                   /* seq */
    {.workers = 2, .split = true, .split_min_us = 0},               /* intra */
    {.workers = 4, .split = true, .split_min_us = 0},               /* intra, more shares */
    {.workers = 2, .dag = true},                                     /* inter */
    {.workers = 4, .dag = true},                                     /* inter */
    {.workers = 3, .dag = true, .split = true, .split_min_us = 0},  /* inter + intra */
};

START_TEST(modes_match_sequential_bytes)
{
    gxt_team e;
    gxt_team_start(&e);
    s_seed = 1000u + (unsigned)_i;
    for (int round = 0; round < 12; round++) {
        /* the reference: the same graph without reshapes, in step order */
        const unsigned seed = s_seed;
        const int n = 20 + (int)(s_rand() % 60);
        gx_graph *g0 = s_random_graph_ex(n, false);
        s_seed = seed;
        s_rand();
        gx_graph *g = s_random_graph(n);
        float x[ROWS * COLS];
        gx_view in = s_input(x);
        gxd_plan *p = NULL, *p0 = NULL;
        char err[512];
        ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
        ck_assert_msg(gxd_compile(g0, &in, &s_lim, &p0, err, sizeof err) == GX_OK, "%s", err);
        s_outs ref, got;
        gxd_par_cfg seq = {.workers = 1};
        ck_assert_int_eq(s_exec(&e, p0, &seq, &in, &ref, err, sizeof err), GX_OK);
        gxd_plan_destroy(&p0);
        gx_graph_destroy(&g0);
        for (size_t c = 0; c < sizeof s_cfgs / sizeof s_cfgs[0]; c++) {
            ck_assert_msg(s_exec(&e, p, &s_cfgs[c], &in, &got, err, sizeof err) == GX_OK, "%s",
                          err);
            ck_assert_uint_eq(got.n, ref.n);
            for (size_t i = 0; i < ref.n; i++)
                ck_assert_msg(s_same(got.data[i], ref.data[i], ref.v[i].numel),
                              "round %d config %zu output %zu differs from the reference", round, c, i);
            s_outs_free(&got);
        }
        s_outs_free(&ref);
        gxd_plan_destroy(&p);
        gx_graph_destroy(&g);
    }
    gxt_team_stop(&e);
}
END_TEST

START_TEST(replicas_run_side_by_side)
{
    /* 3 frames over 2 plans (slices of 2 and 1 rows of a [5, 16] batch
     * would be cut by the pool; here: 3 copies of random inputs), each
     * giving what it gives alone */
    gxt_team e;
    gxt_team_start(&e);
    s_seed = 99;
    gx_graph *g = s_random_graph(40);
    float x[3][ROWS * COLS];
    gx_view in[3];
    gxd_plan *p = NULL;
    char err[512];
    for (int r = 0; r < 3; r++)
        in[r] = s_input(x[r]);
    ck_assert_int_eq(gxd_compile(g, &in[0], &s_lim, &p, err, sizeof err), GX_OK);
    for (int dag = 0; dag < 2; dag++) {
        atomic_bool cancel = false;
        gxd_exec_stop stop = {&cancel, 0};
        gxd_frame f[3];
        void *arena[3];
        size_t bytes = dag ? p->dag_arena_bytes : p->arena_bytes;
        for (int r = 0; r < 3; r++) {
            arena[r] = gx_aligned_alloc(bytes + 1);
            ck_assert_int_eq(gxd_frame_init_ex(&f[r], p, arena[r], dag, &in[r], &s_lim, &stop,
                                               err, sizeof err),
                             GX_OK);
        }
        gxd_par_cfg cfg = {.workers = 3, .dag = dag};
        ck_assert_int_eq(gxd_exec_par(&e.t, &cfg, f, 3, &(int){0}, err, sizeof err), GX_OK);
        for (int r = 0; r < 3; r++) {
            s_outs ref;
            gxd_par_cfg seq = {.workers = 1};
            ck_assert_int_eq(s_exec(&e, p, &seq, &in[r], &ref, err, sizeof err), GX_OK);
            for (size_t i = 0; i < ref.n; i++)
                ck_assert(memcmp(gxd_frame_output(&f[r], i)->data, ref.data[i],
                                 (size_t)ref.v[i].numel * sizeof(float)) == 0);
            s_outs_free(&ref);
            gxd_frame_fini(&f[r]);
            free(arena[r]);
        }
    }
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

START_TEST(cancel_stops_every_mode)
{
    gxt_team e;
    gxt_team_start(&e);
    s_seed = 5;
    gx_graph *g = s_random_graph(30);
    float x[ROWS * COLS];
    gx_view in = s_input(x);
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_int_eq(gxd_compile(g, &in, &s_lim, &p, err, sizeof err), GX_OK);
    for (size_t c = 0; c < sizeof s_cfgs / sizeof s_cfgs[0]; c++) {
        atomic_bool cancel = true;
        gxd_exec_stop stop = {&cancel, 0};
        void *arena = gx_aligned_alloc(p->dag_arena_bytes + p->arena_bytes + 1);
        gxd_frame f;
        ck_assert_int_eq(gxd_frame_init_ex(&f, p, arena, s_cfgs[c].dag, &in, &s_lim, &stop, err,
                                           sizeof err),
                         GX_OK);
        ck_assert_int_eq(gxd_exec_par(&e.t, &s_cfgs[c], &f, 1, &(int){0}, err, sizeof err),
                         GX_ECANCELLED);
        gxd_frame_fini(&f);
        free(arena);
    }
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

START_TEST(step_error_reaches_the_caller)
{
    /* Reshape whose shape comes from a non-keyed (too large) input is
     * dynamic; a bad shape fails at run time, in every mode */
    gxt_team e;
    gxt_team_start(&e);
    gx_graph *g = gx_graph_new("bad");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (const int64_t[]){6}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_I64, 1, (const int64_t[]){1024}), GX_OK);
    const char *x = "x", *a = "a", *rin[2] = {"a", "sl"}, *y = "y";
    const char *sin[3] = {"s", "st", "en"}, *sl = "sl";
    int64_t zero = 0, two = 2;
    gx_tensor *st = gx_tensor_new(GX_I64, 1, (const int64_t[]){1});
    memcpy(gx_tensor_data(st), &zero, 8);
    ck_assert_int_eq(gx_graph_add_const(g, "st", &st), GX_OK);
    gx_tensor *en = gx_tensor_new(GX_I64, 1, (const int64_t[]){1});
    memcpy(gx_tensor_data(en), &two, 8);
    ck_assert_int_eq(gx_graph_add_const(g, "en", &en), GX_OK);
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Relu", NULL, 1, &x, 1, &a));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Slice", NULL, 3, sin, 1, &sl));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Reshape", "bad_reshape", 2, rin, 1, &y));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    float xd[6] = {1, 2, 3, 4, 5, 6};
    int64_t *sd = calloc(1024, sizeof *sd);
    sd[0] = 4, sd[1] = 4; /* 16 != 6 elements */
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 1, .shape = {6}, .numel = 6, .data = xd},
                     {.dtype = GX_I64, .ndim = 1, .shape = {1024}, .numel = 1024, .data = sd}};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_ge(p->n_dynamic, 1);
    s_outs o;
    for (size_t c = 0; c < sizeof s_cfgs / sizeof s_cfgs[0]; c++) {
        err[0] = '\0';
        ck_assert_int_lt(s_exec(&e, p, &s_cfgs[c], in, &o, err, sizeof err), 0);
        ck_assert_msg(strstr(err, "bad_reshape") != NULL, "%s", err);
    }
    free(sd);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

Suite *par_suite(void)
{
    Suite *s = suite_create("par");
    TCase *tc = tcase_create("par");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, dag_edges_and_width);
    tcase_add_loop_test(tc, dag_layout_never_overlaps_live_values, 0, 3);
    tcase_add_test(tc, team_leader_alone_finishes);
    tcase_add_test(tc, team_helpers_join_once_each);
    tcase_add_loop_test(tc, modes_match_sequential_bytes, 0, 3);
    tcase_add_test(tc, replicas_run_side_by_side);
    tcase_add_test(tc, cancel_stops_every_mode);
    tcase_add_test(tc, step_error_reaches_the_caller);
    suite_add_tcase(s, tc);
    return s;
}
