/*
 * The memory budget's count of what a model's plans make beyond
 * themselves (daemon/models.c, docs/security.md "Memory limits"): the
 * graph's table of shared prepared constants, the plans of If/Loop
 * bodies compiled inside a job, and a plan in the artifact cache checked
 * against the budget from the sizes it declares, before it is built.
 * Each test compares the model's count with what it must hold, so it
 * fails when that part is not counted.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "daemon/models.h"
#include "gexec/client.h"
#include "tests/testutil.h"

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

/* y = x @ W, x [4, 64], W a constant [64, 64]: the prepare pass packs W
 * into the graph's shared table. */
static gx_graph *s_matmul_graph(void)
{
    gx_graph *g = gx_graph_new("budget_mm");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){4, 64}), GX_OK);
    float *w = calloc(64 * 64, sizeof *w);
    ck_assert_ptr_nonnull(w);
    for (int i = 0; i < 64 * 64; i++)
        w[i] = (float)(i % 13) * 0.25f;
    gxt_const(g, "W", GX_F32, 2, (int64_t[]){64, 64}, w);
    free(w);
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "MatMul", "mm", NAMES("x", "W"), NAMES("y")));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* *g (ownership moves in) as the model of registry m (initialised), under
 * a budget of budget bytes; the caller releases the model. */
static gxd_model *s_add(gxd_models *m, int64_t budget, gx_graph **g)
{
    gxd_models_set_budget(m, budget);
    gxd_model *mdl = NULL;
    char err[512];
    ck_assert_msg(gxd_models_add(m, g, &mdl, err, sizeof err) == GX_OK, "%s", err);
    return mdl;
}

/* A plan of the matmul graph's model for x [4, 64] of zeros: its status,
 * the plan in *p. */
static int s_mm_plan(gxd_model *mdl, gxd_plan **p, char *err, size_t errlen)
{
    float x[4 * 64] = {0};
    gx_view in[1] = {{.dtype = GX_F32, .ndim = 2, .shape = {4, 64}, .numel = 256, .data = x}};
    int64_t us;
    return gxd_model_plan(mdl, in, &s_lim, p, &us, err, errlen);
}

/* What the model's count holds now. */
static int64_t s_held(gxd_model *mdl)
{
    return atomic_load(&mdl->bytes);
}

static void s_sum_plan(void *arg, const char *attr, const gxd_plan *p)
{
    (void)attr;
    *(int64_t *)arg += gxd_plan_mem_bytes(p);
}

/* The bytes of the subplans cached on plan's control-flow steps. */
static int64_t s_subplan_bytes(const gxd_plan *plan)
{
    int64_t b = 0;
    for (size_t i = 0; i < plan->n_steps; i++)
        if (plan->steps[i].sub)
            ck_assert(gxd_subplans_each(plan->steps[i].sub, false, s_sum_plan, &b));
    return b;
}

/* One job of the If graph (gxt_nested_if(1): x [2], c a bool) on plan,
 * as a worker runs it: GX_OK with y = x + 1 when c, x when not. */
static int s_run_if(gxd_plan *plan, bool c, char *err, size_t errlen)
{
    float x[2] = {1, 2};
    bool cv = c;
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 1, .shape = {2}, .numel = 2, .data = x},
                     {.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &cv}};
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    int rc = gxd_frame_init(&f, plan, arena, in, &s_lim, &stop, err, errlen);
    if (rc == GX_OK && (rc = gxd_exec_seq(&f)) == GX_OK) {
        const gx_view *y = gxd_frame_output(&f, 0);
        ck_assert_ptr_nonnull(y);
        ck_assert_float_eq(((const float *)y->data)[1], c ? 3.0f : 2.0f);
    }
    gxd_frame_fini(&f);
    free(arena);
    return rc;
}

/* The packed copy of W lives in the graph's shared table: counted for
 * the model (once), and gone with it. */
START_TEST(test_shared_constants_counted)
{
    gxd_models m;
    gxd_models_init(&m, 8);
    gx_graph *g = s_matmul_graph();
    const int64_t gb = gxd_graph_mem_bytes(g);
    gxd_model *mdl = s_add(&m, 1ll << 30, &g);
    char err[512];
    gxd_plan *p = NULL;
    ck_assert_msg(s_mm_plan(mdl, &p, err, sizeof err) == GX_OK, "%s", err);
    const int64_t shared = gxd_shared_bytes(mdl->shared);
    ck_assert_int_ge(shared, 64 * 64 * 4); /* the packed W */
    ck_assert_uint_eq(mdl->n_plans, 1);
    ck_assert_int_eq(s_held(mdl), gb + mdl->plan_bytes[0] + shared);
    ck_assert_int_eq((int64_t)atomic_load(&m.bytes), s_held(mdl));
    gxd_plan_release(&p);
    gxd_model_release(&mdl);
    ck_assert_int_eq(gxd_models_unload(&m, gxd_models_peek(&m, m.head->id.hex)), GX_OK);
    ck_assert_int_eq((int64_t)atomic_load(&m.bytes), 0);
    gxd_models_fini(&m);
}
END_TEST

/* A budget that cannot take the shared copy refuses the plan, naming it. */
START_TEST(test_shared_constants_refused)
{
    gxd_models m;
    gxd_models_init(&m, 8);
    gx_graph *g = s_matmul_graph();
    /* the graph and a plan's tables fit; the packed W (16 KiB) does not */
    gxd_model *mdl = s_add(&m, gxd_graph_mem_bytes(g) + 12000, &g);
    char err[512];
    gxd_plan *p = NULL;
    ck_assert_int_eq(s_mm_plan(mdl, &p, err, sizeof err), GX_ELIMIT);
    ck_assert_msg(strstr(err, "limits.max_memory_bytes"), "%s", err);
    ck_assert_int_eq(gxd_shared_bytes(mdl->shared), 0);
    ck_assert_int_eq(s_held(mdl), gxd_graph_mem_bytes(mdl->graph));
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
    ck_assert_int_eq((int64_t)atomic_load(&m.bytes), 0);
}
END_TEST

/* If's branches are compiled inside the job that first takes them: each
 * cached branch plan is counted for the model, one the budget cannot
 * take fails its job with an error naming the budget, and the count goes
 * back to 0 with the model. */
START_TEST(test_subplans_counted)
{
    gxd_models m;
    gxd_models_init(&m, 8);
    gx_graph *g = gxt_nested_if(1);
    const int64_t gb = gxd_graph_mem_bytes(g);
    gxd_model *mdl = s_add(&m, 1ll << 30, &g);
    char err[768];
    float x[2] = {1, 2};
    bool c = true;
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 1, .shape = {2}, .numel = 2, .data = x},
                     {.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &c}};
    gxd_plan *p = NULL;
    int64_t us;
    ck_assert_msg(gxd_model_plan(mdl, in, &s_lim, &p, &us, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(mdl->n_plans, 1);
    const int64_t before = s_subplan_bytes(p);
    ck_assert_msg(s_run_if(p, true, err, sizeof err) == GX_OK, "%s", err);
    const int64_t sub = s_subplan_bytes(p);
    ck_assert_int_gt(sub, before); /* the job compiled then_branch */
    ck_assert_int_eq(s_held(mdl), gb + mdl->plan_bytes[0] + sub);
    /* no room left: else_branch's plan is refused, the job fails */
    gxd_models_set_budget(&m, (int64_t)atomic_load(&m.bytes));
    ck_assert_int_eq(s_run_if(p, false, err, sizeof err), GX_ELIMIT);
    ck_assert_msg(strstr(err, "limits.max_memory_bytes"), "%s", err);
    ck_assert_int_eq(s_subplan_bytes(p), sub);
    ck_assert_int_eq(s_held(mdl), gb + mdl->plan_bytes[0] + sub);
    gxd_models_set_budget(&m, 1ll << 30);
    ck_assert_msg(s_run_if(p, false, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(s_held(mdl), gb + mdl->plan_bytes[0] + s_subplan_bytes(p));
    gxd_plan_release(&p);
    gxd_model_release(&mdl);
    gxd_models_fini(&m);
    ck_assert_int_eq((int64_t)atomic_load(&m.bytes), 0);
}
END_TEST

static int s_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* y = Neg(Relu(x)), x [100000]: a plan whose arena is about 800 KB. */
static gx_graph *s_wide_graph(void)
{
    gx_graph *g = gx_graph_new("budget_wide");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){100000}), GX_OK);
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Relu", "r", NAMES("x"), NAMES("h")));
    ck_assert_ptr_nonnull(gx_graph_add_node(g, "Neg", "n", NAMES("h"), NAMES("y")));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* A plan in the artifact cache larger than the room its model has is
 * refused from the sizes its record declares, before it is built, and
 * stays on disk for a daemon with the room. */
START_TEST(test_artifact_checked_before_read)
{
    char *dir = gxt_tmpdir();
    gx_view in[1] = {{.dtype = GX_F32, .ndim = 1, .shape = {100000}, .numel = 100000}};
    char err[768];
    int64_t us;
    for (int round = 0; round < 2; round++) {
        gxd_models m;
        gxd_models_init(&m, 8);
        ck_assert_int_eq(gxd_models_set_artifacts(&m, dir, 100, 1ll << 30, NULL), GX_OK);
        gx_graph *g = s_wide_graph();
        /* round 0 writes the artifact; round 1 leaves the plan 100 KB */
        gxd_model *mdl = s_add(&m, round ? gxd_graph_mem_bytes(g) + 100000 : 1ll << 30, &g);
        gxd_plan *p = NULL;
        const int rc = gxd_model_plan(mdl, in, &s_lim, &p, &us, err, sizeof err);
        if (round == 0) {
            ck_assert_msg(rc == GX_OK, "%s", err);
            gxd_artifacts_flush(m.artifacts); /* written after the compile */
            ck_assert_int_eq(s_count_files(dir), 1);
        } else {
            ck_assert_int_eq(rc, GX_ELIMIT);
            ck_assert_msg(strstr(err, "artifact: its plan needs at least") &&
                              strstr(err, "limits.max_memory_bytes") && strstr(err, "not read"),
                          "%s", err);
            ck_assert_int_eq(s_count_files(dir), 1); /* not removed */
            ck_assert_int_eq(s_held(mdl), gxd_graph_mem_bytes(mdl->graph));
        }
        gxd_plan_release(&p);
        gxd_model_release(&mdl);
        gxd_models_fini(&m);
        ck_assert_int_eq((int64_t)atomic_load(&m.bytes), 0);
    }
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_shared_constants_counted);
    tcase_add_test(tc, test_shared_constants_refused);
    tcase_add_test(tc, test_subplans_counted);
    tcase_add_test(tc, test_artifact_checked_before_read);
    suite_add_tcase(s, tc);
    return s;
}
