/*
 * The profile store (daemon/profile.h): the file format round trip, hostile
 * and broken files ignored, counts of nodes inside Loop and If (trip count
 * and branch probability), seeding a fresh plan, and a real gexecd that
 * keeps a profile across a restart and estimates from it.
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/compile/compile.h"
#include "daemon/config.h"
#include "daemon/exec/exec.h"
#include "daemon/job.h"
#include "daemon/models.h"
#include "daemon/profile.h"
#include "core/internal.h"
#include "core/json.h"
#include "core/wire.h"
#include "tests/testutil.h"

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

static const char s_hex[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

static void s_write(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

static char *s_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s missing", path);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static gxd_profile *s_sample(void)
{
    gxd_profile *p = gxd_profile_new(s_hex);
    ck_assert_ptr_nonnull(p);
    p->jobs = 7;
    ck_assert_int_eq(gxd_profile_add(p, "mm", 7, 35000), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "loop/body/add \"quoted\" \xc3\xa9", 21, 120), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "relu", 7, 0), GX_OK);
    gxd_profile_finish(p);
    return p;
}

static void s_assert_same(const gxd_profile *a, const gxd_profile *b)
{
    ck_assert_str_eq(a->graph, b->graph);
    ck_assert_int_eq(a->jobs, b->jobs);
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        ck_assert_str_eq(a->nodes[i].name, b->nodes[i].name);
        ck_assert_int_eq(a->nodes[i].runs, b->nodes[i].runs);
        ck_assert_int_eq(a->nodes[i].ns, b->nodes[i].ns);
    }
}

START_TEST(test_round_trip)
{
    gxd_profile *p = s_sample(), *q = NULL;
    char err[512];
    char *text = gxd_profile_to_json(p);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(gxd_profile_from_json(text, s_hex, &q, err, sizeof err), GX_OK);
    s_assert_same(p, q);
    gxd_profile_destroy(&q);
    free(text);

    /* save, load; the temporary file is gone; no file reads as no profile */
    char *dir = gxt_tmpdir(), sub[4096], path[4200];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    ck_assert_int_eq(gxd_profile_save(p, sub, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_profile_load(sub, s_hex, &q, err, sizeof err), GX_OK);
    ck_assert_ptr_nonnull(q);
    s_assert_same(p, q);
    gxd_profile_destroy(&q);
    char out[256];
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls -A '%s' | wc -l", sub), 0);
    ck_assert_int_eq(atoi(out), 1);
    ck_assert_int_eq(gxd_profile_load(sub, "ab", &q, err, sizeof err), GX_OK);
    ck_assert_ptr_null(q);
    ck_assert_int_lt(gxd_profile_load(sub, "../x", &q, err, sizeof err), 0);
    /* a second save replaces the first */
    p->jobs = 9;
    ck_assert_int_eq(gxd_profile_save(p, sub, err, sizeof err), GX_OK);
    snprintf(path, sizeof path, "%s/%s.json", sub, s_hex);
    char *t = s_read(path);
    ck_assert_ptr_nonnull(strstr(t, "\"jobs\": 9"));
    free(t);
    gxd_profile_destroy(&p);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Repeated names merge: runs add up, times are weighted by runs among the
 * timed entries. */
START_TEST(test_merge)
{
    gxd_profile *p = gxd_profile_new(s_hex), *q = gxd_profile_new(s_hex);
    ck_assert_int_eq(gxd_profile_add(p, "b", 1, 100), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "a", 3, 1000), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "a", 1, 2000), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "a", 4, 0), GX_OK);
    gxd_profile_finish(p);
    ck_assert_uint_eq(p->n, 2);
    const gxd_profile_node *a = gxd_profile_find(p, "a");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->runs, 8);
    ck_assert_int_eq(a->ns, 1250);
    ck_assert_ptr_null(gxd_profile_find(p, "c"));
    q->jobs = 2;
    ck_assert_int_eq(gxd_profile_add(q, "b", 3, 500), GX_OK);
    ck_assert_int_eq(gxd_profile_merge(p, q), GX_OK);
    ck_assert_int_eq(p->jobs, 2);
    ck_assert_int_eq(gxd_profile_find(p, "b")->runs, 4);
    ck_assert_int_eq(gxd_profile_find(p, "b")->ns, 400);
    gxd_profile_destroy(&p);
    gxd_profile_destroy(&q);
}
END_TEST

/* Each of these files is refused with a reason, never half read. */
START_TEST(test_hostile_files)
{
    gxd_profile *good = s_sample(), *q = NULL;
    char *text = gxd_profile_to_json(good);
    size_t len = strlen(text);
    char *dir = gxt_tmpdir(), path[4200], err[512];
    snprintf(path, sizeof path, "%s/%s.json", dir, s_hex);
    static const char *const bad[] = {
        "",
        "not json",
        "[1, 2]",
        "{\"format\": \"other\", \"version\": 1}",
        "{\"format\": \"gexec-profile\", \"version\": 2, \"graph\": \"x\", \"jobs\": 1, \"nodes\": []}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"ab\", \"jobs\": 1, \"nodes\": []}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": -1, \"nodes\": []}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1.5, \"nodes\": []}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1e300, \"nodes\": []}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1, \"nodes\": {}}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1, \"nodes\": [1]}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1, "
        "\"nodes\": [{\"name\": \"\", \"runs\": 1, \"ns\": 1}]}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1, "
        "\"nodes\": [{\"name\": \"a\", \"runs\": \"1\", \"ns\": 1}]}",
        "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", \"jobs\": 1, "
        "\"nodes\": [{\"name\": \"a\", \"runs\": 1, \"ns\": -5}]}",
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(buf, sizeof buf, bad[i], s_hex);
        s_write(path, buf, strlen(buf));
        q = (gxd_profile *)1;
        ck_assert_msg(gxd_profile_load(dir, s_hex, &q, err, sizeof err) < 0, "accepted: %s", buf);
        ck_assert_ptr_null(q);
        ck_assert_ptr_nonnull(strstr(err, path));
    }
    /* truncated anywhere */
    for (size_t cut = 1; cut < len - 1; cut += 7) {
        s_write(path, text, cut);
        ck_assert_msg(gxd_profile_load(dir, s_hex, &q, err, sizeof err) < 0, "cut %zu", cut);
        ck_assert_ptr_null(q);
    }
    /* a NUL byte inside */
    char *nul = strdup(text);
    nul[len / 2] = '\0';
    s_write(path, nul, len);
    free(nul);
    ck_assert_int_eq(gxd_profile_load(dir, s_hex, &q, err, sizeof err), GX_EFORMAT);
    /* a name longer than a path may be */
    char *longname = malloc(GXD_PROFILE_MAX_NAME + 600);
    int n = snprintf(longname, 600,
                     "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": \"%s\", "
                     "\"jobs\": 1, \"nodes\": [{\"runs\": 1, \"ns\": 1, \"name\": \"", s_hex);
    memset(longname + n, 'x', GXD_PROFILE_MAX_NAME + 1);
    strcpy(longname + n + GXD_PROFILE_MAX_NAME + 1, "\"}]}");
    s_write(path, longname, strlen(longname));
    free(longname);
    ck_assert_int_eq(gxd_profile_load(dir, s_hex, &q, err, sizeof err), GX_ELIMIT);
    /* too large (sparse: nothing is read) */
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, GXD_PROFILE_MAX_FILE + 1), 0);
    close(fd);
    ck_assert_int_eq(gxd_profile_load(dir, s_hex, &q, err, sizeof err), GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(err, "larger than"));
    /* not a regular file; a symbolic link is not followed */
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_lt(gxd_profile_load(dir, s_hex, &q, err, sizeof err), 0);
    rmdir(path);
    char target[4300];
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    s_write(target, text, len);
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_int_lt(gxd_profile_load(dir, s_hex, &q, err, sizeof err), 0);
    ck_assert_ptr_null(q);
    /* and the good text still loads */
    unlink(path);
    s_write(path, text, len);
    ck_assert_int_eq(gxd_profile_load(dir, s_hex, &q, err, sizeof err), GX_OK);
    s_assert_same(good, q);
    gxd_profile_destroy(&q);
    /* a directory that cannot be created: the save fails cleanly */
    snprintf(target, sizeof target, "%s/%s.json/sub", dir, s_hex);
    ck_assert_int_eq(gxd_profile_save(good, target, err, sizeof err), GX_EIO);
    free(text);
    gxd_profile_destroy(&good);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_dir)
{
    char out[1024];
    /* the key takes an absolute path, "default" or "" */
    gxd_config c;
    gxd_config_init(&c);
    ck_assert_int_eq(gxd_config_set(&c, "profile.dir", "rel/dir", out, sizeof out), GX_ECONFIG);
    ck_assert_msg(strstr(out, "'rel/dir' is not an absolute path"), "%s", out);
    ck_assert_int_eq(gxd_config_set(&c, "profile.dir", "", out, sizeof out), GX_OK);
    ck_assert_str_eq(c.profile_dir, "");
    ck_assert_int_eq(gxd_config_set(&c, "profile.dir", "/p", out, sizeof out), GX_OK);
    ck_assert_str_eq(c.profile_dir, "/p");
    gxd_config_fini(&c);
    gxd_profile_dir("", out, sizeof out);
    ck_assert_str_eq(out, "");
    gxd_profile_dir(NULL, out, sizeof out);
    ck_assert_str_eq(out, "");
    gxd_profile_dir("/srv/p", out, sizeof out);
    ck_assert_str_eq(out, "/srv/p");
    char *unit = getenv("STATE_DIRECTORY") ? strdup(getenv("STATE_DIRECTORY")) : NULL;
    setenv("STATE_DIRECTORY", "/var/lib/gexec:/other", 1);
    gxd_profile_dir("default", out, sizeof out);
    ck_assert_str_eq(out, "/var/lib/gexec/profiles");
    setenv("STATE_DIRECTORY", "/srv/state", 1);
    gxd_profile_dir("default", out, sizeof out);
    ck_assert_str_eq(out, "/srv/state/profiles");
    unsetenv("STATE_DIRECTORY");
    gxd_profile_dir("default", out, sizeof out);
    if (geteuid() == 0) {
        ck_assert_str_eq(out, "/var/lib/gexec/profiles");
    } else {
        char *old = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
        setenv("XDG_STATE_HOME", "/st", 1);
        gxd_profile_dir("default", out, sizeof out);
        ck_assert_str_eq(out, "/st/gexec/profiles");
        unsetenv("XDG_STATE_HOME");
        setenv("HOME", getenv("HOME") ? getenv("HOME") : "/h", 1);
        gxd_profile_dir("default", out, sizeof out);
        ck_assert_ptr_nonnull(strstr(out, "/.local/state/gexec/profiles"));
        if (old)
            setenv("XDG_STATE_HOME", old, 1);
        free(old);
    }
    if (unit)
        setenv("STATE_DIRECTORY", unit, 1);
    free(unit);
}
END_TEST

static gx_node *s_node(gx_graph *g, const char *op, const char *name, size_t n_in,
                       const char *const *in, size_t n_out, const char *const *out)
{
    gx_node *n = gx_graph_add_node(g, op, name, n_in, in, n_out, out);
    ck_assert_ptr_nonnull(n);
    return n;
}


/* Loop "loop" (3 trips) whose body runs If "pick" (i < 1): then "plus"
 * v + x, else "minus" v - x. From v0 [10, 20] and x [1, 2]: [9, 18]. */
static gx_graph *s_loop_graph(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "Add", "plus", NAMES("v", "x"), NAMES("t"));
    ck_assert_int_eq(gx_graph_add_output(then, "t"), GX_OK);
    s_node(els, "Sub", "minus", NAMES("v", "x"), NAMES("e"));
    ck_assert_int_eq(gx_graph_add_output(els, "e"), GX_OK);

    gx_graph *body = gx_graph_new("body");
    ck_assert_int_eq(gx_graph_add_input(body, "i", GX_I64, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(body, "c", GX_BOOL, 0, NULL), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(body, "v", GX_F32, 1, (int64_t[]){2}), GX_OK);
    gxt_const(body, "one", GX_I64, 0, NULL, (int64_t[]){1});
    s_node(body, "Identity", "keep", NAMES("c"), NAMES("c_out"));
    s_node(body, "Less", "early", NAMES("i", "one"), NAMES("b"));
    gx_node *n = s_node(body, "If", "pick", NAMES("b"), NAMES("v_out"));
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(body, "c_out"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(body, "v_out"), GX_OK);

    gx_graph *g = gx_graph_new("loop");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "cond", GX_BOOL, 0, NULL), GX_OK);
    gxt_const(g, "v0", GX_F32, 1, (int64_t[]){2}, (float[]){10, 20});
    gxt_const(g, "m", GX_I64, 0, NULL, (int64_t[]){3});
    n = s_node(g, "Loop", "loop", NAMES("m", "cond", "v0"), NAMES("v_final"));
    ck_assert_int_eq(gx_node_set_graph(n, "body", &body), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "v_final"), GX_OK);
    return g;
}

static gx_view s_view(gx_dtype dt, int ndim, const int64_t *shape, void *data)
{
    gx_view v = {.dtype = dt, .ndim = ndim, .data = data};
    if (ndim)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    v.numel = gx_shape_numel(ndim, shape, INT64_MAX);
    return v;
}

static int64_t s_runs(const gxd_profile *p, const char *name)
{
    const gxd_profile_node *e = gxd_profile_find(p, name);
    ck_assert_msg(e != NULL, "no node %s", name);
    return e->runs;
}

/* Runs of nodes in subgraphs give the trip count and the branch
 * probability. */
START_TEST(test_control_counts)
{
    gx_graph *g = s_loop_graph();
    float x[2] = {1, 2};
    uint8_t c = 1;
    gx_view in[2] = {s_view(GX_F32, 1, (int64_t[]){2}, x), s_view(GX_BOOL, 0, NULL, &c)};
    gxd_plan *plan = NULL;
    char err[1024];
    ck_assert_msg(gxd_compile(g, in, &s_lim, &plan, err, sizeof err) == GX_OK, "%s", err);
    for (int job = 0; job < 2; job++) {
        void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
        atomic_bool cancel = false;
        gxd_exec_stop stop = {&cancel, 0};
        gxd_frame f;
        ck_assert_int_eq(gxd_frame_init(&f, plan, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
        ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
        const gx_view *y = gxd_frame_output(&f, 0);
        ck_assert(gxt_allclose(y->data, (float[]){9, 18}, 2, 0, 0));
        gxd_frame_fini(&f);
        free(arena);
    }
    gxd_profile *p = gxd_profile_new(s_hex);
    ck_assert_int_eq(gxd_profile_fold_plan(p, plan, "", true, false), GX_OK);
    gxd_profile_finish(p);
    ck_assert_int_eq(p->jobs, 2);
    ck_assert_int_eq(s_runs(p, "loop"), 2);
    ck_assert_int_eq(s_runs(p, "loop/body/pick"), 6);
    ck_assert_int_eq(s_runs(p, "loop/body/early"), 6);
    ck_assert_int_eq(s_runs(p, "loop/body/pick/then_branch/plus"), 2);
    ck_assert_int_eq(s_runs(p, "loop/body/pick/else_branch/minus"), 4);
    /* trip count 3, then taken 1 time in 3 */
    ck_assert_int_eq(s_runs(p, "loop/body/pick") / s_runs(p, "loop"), 3);
    ck_assert_double_eq_tol((double)s_runs(p, "loop/body/pick/then_branch/plus") /
                                (double)s_runs(p, "loop/body/pick"),
                            1.0 / 3, 1e-12);
    /* the second job was timed: the loop step has a time */
    ck_assert_int_gt(gxd_profile_find(p, "loop")->ns, 0);

    /* a fresh plan seeded from the profile estimates with the measured time */
    gxd_plan *fresh = NULL;
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &fresh, err, sizeof err), GX_OK);
    ck_assert_uint_eq(gxd_profile_seed(p, fresh), 1);
    for (size_t s = 0; s < fresh->n_steps; s++)
        if (!fresh->steps[s].folded && strcmp(fresh->steps[s].node->name, "loop") == 0)
            ck_assert_double_eq_tol(gxd_step_cost_us(fresh, s),
                                    (double)gxd_profile_find(p, "loop")->ns / 1000.0, 1e-9);
    gxd_plan_destroy(&fresh);
    gxd_profile_destroy(&p);
    gxd_plan_destroy(&plan);
    gx_graph_destroy(&g);
}
END_TEST

/* y = MatMul "mm" (x, w), x and w [64, 64] */
static gx_graph *s_mm_graph(float scale)
{
    gx_graph *g = gx_graph_new("mm");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){64, 64}), GX_OK);
    float *w = malloc(64 * 64 * sizeof *w);
    for (int i = 0; i < 64 * 64; i++)
        w[i] = scale * (float)(i % 7);
    gxt_const(g, "w", GX_F32, 2, (int64_t[]){64, 64}, w);
    free(w);
    s_node(g, "MatMul", "mm", NAMES("x", "w"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static gx_result *s_run_mm(gx_client *cl, const gx_graph *g)
{
    float *x = calloc(64 * 64, sizeof *x);
    gx_tensor *t = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){64, 64}, x, 64 * 64 * sizeof *x);
    free(x);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_set_mode(rq, GX_MODE_SEQ);
    gx_request_add_input(rq, "x", t);
    gx_result *r = NULL;
    ck_assert_msg(gx_client_run(cl, rq, &r) == GX_OK, "%s", gx_client_last_error(cl));
    gx_request_destroy(&rq);
    gx_tensor_destroy(&t);
    return r;
}


static void s_exec(gxd_plan *plan, const gx_view *in)
{
    char err[512];
    void *arena = gx_aligned_alloc(plan->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, plan, arena, in, &s_lim, &stop, err, sizeof err), GX_OK);
    ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
    gxd_frame_fini(&f);
    free(arena);
}

static gxd_profile *s_load(const char *dir, const char *hex)
{
    gxd_profile *p = NULL;
    char err[512];
    ck_assert_msg(gxd_profile_load(dir, hex, &p, err, sizeof err) == GX_OK, "%s", err);
    return p;
}

/* The registry's hooks: the I/O thread's periodic save (only when jobs
 * ran since), the save when a model is evicted, and a plan compiled after
 * a reload seeded from the file. */
START_TEST(test_models_hooks)
{
    char *dir = gxt_tmpdir(), err[512];
    float *x = calloc(64 * 64, sizeof *x);
    gx_view in[1] = {s_view(GX_F32, 2, (int64_t[]){64, 64}, x)};
    gxd_models m;
    gxd_models_init(&m, 1);
    ck_assert_int_eq(gxd_models_set_profile(&m, dir, 100, 1 << 30, NULL), GX_OK);
    gx_graph *g = s_mm_graph(1);
    gxd_model *mdl = NULL;
    ck_assert_int_eq(gxd_models_add(&m, &g, &mdl, err, sizeof err), GX_OK);
    ck_assert_ptr_nonnull(mdl);
    char hex[65];
    snprintf(hex, sizeof hex, "%s", mdl->id.hex);
    gxd_plan *plan;
    int64_t us;
    ck_assert_int_eq(gxd_model_plan(mdl, in, &s_lim, &plan, &us, err, sizeof err), GX_OK);
    gxd_models_save_profiles(&m); /* no job yet: nothing written */
    ck_assert_ptr_null(s_load(dir, hex));
    for (int i = 0; i < 3; i++)
        s_exec(plan, in);
    gxd_models_save_profiles(&m);
    gxd_profile *p = s_load(dir, hex);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->jobs, 3);
    ck_assert_int_eq(s_runs(p, "mm"), 3);
    gxd_profile_destroy(&p);
    s_exec(plan, in);
    gxd_plan_release(&plan); /* a job lets go of its plan, then of the model */
    gxd_model_release(&mdl);
    /* another graph evicts this one, which saves its last job */
    gx_graph *g2 = s_mm_graph(2);
    gxd_model *other = NULL;
    ck_assert_int_eq(gxd_models_add(&m, &g2, &other, err, sizeof err), GX_OK);
    ck_assert_uint_eq(m.n, 1);
    p = s_load(dir, hex);
    ck_assert_int_eq(p->jobs, 4);
    int64_t ns = gxd_profile_find(p, "mm")->ns;
    ck_assert_int_gt(ns, 0);
    gxd_profile_destroy(&p);
    gxd_model_release(&other);
    gxd_models_fini(&m);

    /* loaded again: the new plan starts from the measured time */
    gxd_models_init(&m, 4);
    ck_assert_int_eq(gxd_models_set_profile(&m, dir, 100, 1 << 30, NULL), GX_OK);
    g = s_mm_graph(1);
    ck_assert_int_eq(gxd_models_add(&m, &g, &mdl, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_model_plan(mdl, in, &s_lim, &plan, &us, err, sizeof err), GX_OK);
    ck_assert_int_eq(atomic_load(&plan->stats[0].ns), ns);
    gxd_plan_release(&plan);
    gxd_model_release(&mdl);
    gxd_models_fini(&m); /* no job ran: the file stays as it was */
    p = s_load(dir, hex);
    ck_assert_int_eq(p->jobs, 4);
    gxd_profile_destroy(&p);
    free(x);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- the store's bounds, failures and atomic writes ---- */

/* A profile of graph "<c>" x 64 with n nodes (its file grows with n). */
static gxd_profile *s_prof(char c, int n)
{
    char hex[65];
    memset(hex, c, 64);
    hex[64] = '\0';
    gxd_profile *p = gxd_profile_new(hex);
    ck_assert_ptr_nonnull(p);
    p->jobs = 1;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "node%d", i);
        ck_assert_int_eq(gxd_profile_add(p, name, 1, 100), GX_OK);
    }
    gxd_profile_finish(p);
    return p;
}

static bool s_has(const char *dir, char c)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%.64s.json", dir,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    memset(path + strlen(dir) + 1, c, 64);
    return access(path, F_OK) == 0;
}

static void s_save(gxd_profile_store *st, char c, int n)
{
    gxd_profile *p = s_prof(c, n);
    ck_assert_int_eq(gxd_profile_store_save(st, p), GX_OK);
    gxd_profile_destroy(&p);
}

/* Files in dir whose name starts with '.' (temporary files). */
static int s_hidden(const char *dir)
{
    char out[4096];
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls -A '%s' | grep -c '^\\.' || true", dir), 0);
    return atoi(out);
}

/* At most max_entries files: a save beyond removes the least recently
 * used graph's (saved, or read when loaded); the bounds in bytes likewise;
 * a new store over the directory orders it by the files' times. */
START_TEST(test_store_bounds)
{
    char *dir = gxt_tmpdir();
    gxd_profile_store *st = gxd_profile_store_new(dir, 3, 1 << 30, NULL);
    ck_assert_ptr_nonnull(st);
    s_save(st, 'a', 1);
    s_save(st, 'b', 1);
    s_save(st, 'c', 1);
    /* a is used (loaded): b is now the least recently used */
    gxd_profile *p = NULL;
    char err[512], hex[65];
    memset(hex, 'a', 64);
    hex[64] = '\0';
    ck_assert_int_eq(gxd_profile_store_load(st, hex, &p, err, sizeof err), GX_OK);
    ck_assert_ptr_nonnull(p);
    gxd_profile_destroy(&p);
    s_save(st, 'd', 1);
    ck_assert(s_has(dir, 'a') && !s_has(dir, 'b') && s_has(dir, 'c') && s_has(dir, 'd'));
    s_save(st, 'c', 1); /* saved again: c is recent */
    s_save(st, 'e', 1);
    ck_assert(!s_has(dir, 'a') && s_has(dir, 'c') && s_has(dir, 'd') && s_has(dir, 'e'));
    gxd_profile_store_stats ss;
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.entries, 3);
    ck_assert_int_eq(ss.evicted, 2);
    ck_assert_int_eq(ss.saved, 6);
    ck_assert_int_eq(ss.failed, 0);
    int64_t one = ss.bytes / 3;
    gxd_profile_store_destroy(&st);

    /* bytes: room for two small files; a big one removes the oldest until
     * it fits, and the file just written always stays */
    st = gxd_profile_store_new(dir, 100, 2 * one + one / 2, NULL);
    gxd_profile_store_open(st); /* already over: the oldest (c, d, e by time) go */
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.entries, 2);
    ck_assert_int_le(ss.bytes, 2 * one + one / 2);
    s_save(st, 'f', 1);
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.entries, 2);
    ck_assert(s_has(dir, 'f'));
    s_save(st, '9', 200); /* alone larger than the bound */
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.entries, 1);
    ck_assert(s_has(dir, '9') && !s_has(dir, 'f'));
    gxd_profile_store_destroy(&st);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Run fn with stderr going to a file; returns the lines written that
 * contain needle. */
static int s_count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* A save that fails is logged once for its cause and counted after; a
 * full disk (a file size limit here) leaves the old file whole and no
 * temporary file; saves that work again say how many failed. Temporary
 * files a crash left are removed when the directory is read. */
START_TEST(test_store_failures)
{
    char *dir = gxt_tmpdir(), path[4400], logpath[4200], sub[4200];
    snprintf(logpath, sizeof logpath, "%s/log", dir);
    snprintf(sub, sizeof sub, "%s/p", dir);
    int logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(logfd, 0);
    ck_assert_int_eq(dup2(logfd, 2), 2); /* this test's process only (Check forks) */
    gxd_log log;
    gxd_log_init(&log, GXD_LOG_INFO);

    /* the directory cannot be created: a file is in the way */
    s_write(sub, "x", 1);
    gxd_profile_store *st = gxd_profile_store_new(sub, 100, 1 << 30, &log);
    for (char c = 'a'; c < 'a' + 5; c++) {
        gxd_profile *p = s_prof(c, 1);
        ck_assert_int_eq(gxd_profile_store_save(st, p), GX_EIO);
        gxd_profile_destroy(&p);
    }
    gxd_profile_store_stats ss;
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.failed, 5);
    ck_assert_int_eq(s_count_lines(logpath, "not saved: create a temporary file: Not a directory"), 1);
    gxd_profile_store_destroy(&st); /* logs the count */
    ck_assert_int_eq(s_count_lines(logpath, "5 saves failed"), 1);
    unlink(sub);

    /* a disk that fills up: the old file stays whole */
    st = gxd_profile_store_new(sub, 100, 1 << 30, &log);
    s_save(st, 'a', 1);
    snprintf(path, sizeof path, "%s/%s.json", sub,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    char *before = s_read(path);
    /* no ck_assert while the limit holds: Check records them in a file */
    struct rlimit full, saved_lim;
    gxd_profile *big = s_prof('a', 500); /* ~25 KB of JSON */
    int rc[3];
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved_lim), 0);
    full = saved_lim;
    full.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    int limited = setrlimit(RLIMIT_FSIZE, &full);
    for (int i = 0; i < 3; i++)
        rc[i] = gxd_profile_store_save(st, big);
    int restored = setrlimit(RLIMIT_FSIZE, &saved_lim);
    ck_assert_int_eq(limited, 0);
    ck_assert_int_eq(restored, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rc[i], GX_EIO);
    gxd_profile_destroy(&big);
    char *after = s_read(path);
    ck_assert_str_eq(before, after);
    ck_assert_int_eq(s_hidden(sub), 0);
    ck_assert_int_eq(s_count_lines(logpath, "not saved: write: File too large"), 1);
    s_save(st, 'a', 500);
    ck_assert_int_eq(s_count_lines(logpath, "saved again, after 3 failed: write"), 1);
    free(before);
    free(after);
    gxd_profile_store_destroy(&st);

    /* a save cut short by SIGKILL leaves a temporary file: removed on open */
    snprintf(path, sizeof path, "%s/.%s.json.AbC123", sub,
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    s_write(path, "{\"format\": \"gexec-pro", 22);
    ck_assert_int_eq(s_hidden(sub), 1);
    st = gxd_profile_store_new(sub, 100, 1 << 30, &log);
    gxd_profile_store_open(st);
    ck_assert_int_eq(s_hidden(sub), 0);
    gxd_profile_store_stats_get(st, &ss);
    ck_assert_int_eq(ss.entries, 1);
    gxd_profile_store_destroy(&st);
    close(logfd);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A real gexecd keeps the profile across a restart: written at SIGTERM,
 * read when the graph comes back, and the first job's estimate is the
 * measured time. A broken file for another graph is ignored. */
START_TEST(test_daemon_restart)
{
    char *dir = gxt_tmpdir(), conf[4200], pdir[4200], path[4400], err[256];
    snprintf(pdir, sizeof pdir, "%s/profiles", dir);
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "profile:\n  dir: \"%s\"\n", pdir);
    s_write(conf, yaml, strlen(yaml));
    const char *args[] = {"-c", conf, NULL};
    gx_graph *g = s_mm_graph(1), *g2 = s_mm_graph(2);
    gx_graph_id id, id2;
    gx_wire_graph_id(g, &id);
    gx_wire_graph_id(g2, &id2);

    gxt_daemon d;
    gxt_daemon_start(&d, args);
    gx_client *cl = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(cl);
    for (int i = 0; i < 4; i++) {
        gx_result *r = s_run_mm(cl, g);
        gx_result_destroy(&r);
    }
    gx_client_destroy(&cl);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);

    snprintf(path, sizeof path, "%s/%s.json", pdir, id.hex);
    char *text = s_read(path);
    gxd_profile *p = NULL;
    ck_assert_msg(gxd_profile_from_json(text, id.hex, &p, err, sizeof err) == GX_OK, "%s", err);
    free(text);
    ck_assert_int_eq(p->jobs, 4);
    ck_assert_int_eq(s_runs(p, "mm"), 4);
    int64_t ns = gxd_profile_find(p, "mm")->ns;
    ck_assert_int_gt(ns, 0);
    gxd_profile_destroy(&p);

    /* garbage where the other graph's profile would be */
    snprintf(path, sizeof path, "%s/%s.json", pdir, id2.hex);
    s_write(path, "{\"format\": \"gexec-profile\", \"nodes\": [", 38);

    gxt_daemon_start(&d, args);
    cl = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(cl);
    /* explain shows the measured time of the step (no job ran yet) */
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    char *json = NULL;
    ck_assert_msg(gx_client_explain(cl, rq, &json) == GX_OK, "%s", gx_client_last_error(cl));
    gx_json *j = gx_json_parse(json, err, sizeof err);
    ck_assert_ptr_nonnull(j);
    const gx_json *steps = gx_json_get(j, "steps");
    ck_assert_uint_eq(gx_json_len(steps), 1);
    ck_assert_double_eq_tol(gx_json_num(gx_json_get(gx_json_at(steps, 0), "measured_us"), -1),
                            (double)ns / 1000.0, 1e-6);
    gx_json_destroy(&j);
    free(json);
    gx_request_destroy(&rq);
    gx_result *r = s_run_mm(cl, g);
    const gx_run_info *info = gx_result_info(r);
    ck_assert_msg(fabs(info->est_us[GX_MODE_SEQ] - (double)ns / 1000.0) < 1e-6,
                  "estimate %g us, measured %g us", info->est_us[GX_MODE_SEQ], (double)ns / 1000.0);
    gx_result_destroy(&r);
    r = s_run_mm(cl, g2); /* its broken profile is ignored */
    ck_assert_int_eq(gx_result_status(r), GX_OK);
    gx_result_destroy(&r);
    gx_client_destroy(&cl);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);

    /* the second daemon added its job to what the first measured */
    snprintf(path, sizeof path, "%s/%s.json", pdir, id.hex);
    text = s_read(path);
    ck_assert_int_eq(gxd_profile_from_json(text, id.hex, &p, err, sizeof err), GX_OK);
    free(text);
    ck_assert_int_eq(p->jobs, 5);
    ck_assert_int_eq(s_runs(p, "mm"), 5);
    gxd_profile_destroy(&p);
    /* and the broken one was replaced by a good one */
    snprintf(path, sizeof path, "%s/%s.json", pdir, id2.hex);
    text = s_read(path);
    ck_assert_int_eq(gxd_profile_from_json(text, id2.hex, &p, err, sizeof err), GX_OK);
    free(text);
    ck_assert_int_eq(p->jobs, 1);
    gxd_profile_destroy(&p);

    gx_graph_destroy(&g);
    gx_graph_destroy(&g2);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("store");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_merge);
    tcase_add_test(tc, test_hostile_files);
    tcase_add_test(tc, test_dir);
    tcase_add_test(tc, test_control_counts);
    tcase_add_test(tc, test_models_hooks);
    tcase_add_test(tc, test_daemon_restart);
    tcase_add_test(tc, test_store_bounds);
    tcase_add_test(tc, test_store_failures);
    suite_add_tcase(s, tc);
    return s;
}
