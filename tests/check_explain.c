/*
 * explain end to end: a real gexecd answers EXPLAIN with the plan it
 * compiled, and what it says must be what gxd_compile builds in-process
 * for the same graph and inputs (steps, kernels, every buffer's number,
 * size and offsets, arena sizes, batch and DAG reasons); gexec-submit
 * explain renders it as tables or passes the JSON through.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "core/json.h"
#include "tests/testutil.h"

#define NAMES(...) (const char *[]){__VA_ARGS__}

static const gxd_compile_limits s_lim = {.max_nodes = 100000,
                                         .max_tensor_bytes = 1ll << 30,
                                         .max_arena_bytes = 1ll << 32};

/* One daemon for the suite's tests. */
static gxt_daemon s_d;
static gx_client *s_cli;

static void s_setup(void)
{
    gxt_daemon_start(&s_d, NULL);
    char err[256];
    s_cli = gx_client_new(s_d.endpoint, err, sizeof err);
    ck_assert_msg(s_cli != NULL, "%s", err);
    gx_client_set_timeout(s_cli, 30000);
}

static void s_teardown(void)
{
    gx_client_destroy(&s_cli);
    ck_assert_int_eq(gxt_daemon_stop(&s_d), 0);
}

/* EXPLAIN of rq, parsed; fails the test unless the daemon answers GX_OK
 * with JSON that parses. */
static gx_json *s_explain(const gx_request *rq)
{
    char *text = NULL, err[256];
    int rc = gx_client_explain(s_cli, rq, &text);
    ck_assert_msg(rc == GX_OK, "EXPLAIN: %s: %s", gx_status_name(rc), gx_client_last_error(s_cli));
    gx_json *j = gx_json_parse(text, err, sizeof err);
    ck_assert_msg(j != NULL, "%s in %s", err, text);
    free(text);
    return j;
}

static const char *s_kind(const gxd_plan *p, size_t v)
{
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].scratch == (int)v && !p->steps[i].folded && !p->steps[i].dynamic)
            return "scratch";
    switch (p->values[v].kind) {
    case GXD_VALUE_INPUT: return "input";
    case GXD_VALUE_CONST: return "const";
    case GXD_VALUE_TEMP: return "temp";
    case GXD_VALUE_DYNAMIC: return "dynamic";
    case GXD_VALUE_FUSED: return "fused";
    }
    return "?";
}

/* A JSON number that must be there and equal want. */
static void s_eq_num(const gx_json *v, double want, const char *what)
{
    ck_assert_msg(v && v->type == GX_JSON_NUM, "%s: missing or not a number", what);
    ck_assert_msg(v->num == want, "%s: %.17g, want %.17g", what, v->num, want);
}

static void s_eq_str(const gx_json *v, const char *want, const char *what)
{
    if (!want) {
        ck_assert_msg(v && v->type == GX_JSON_NULL, "%s: want null", what);
        return;
    }
    ck_assert_msg(v && v->type == GX_JSON_STR, "%s: missing or not a string", what);
    ck_assert_msg(strcmp(v->str, want) == 0, "%s: '%s', want '%s'", what, v->str, want);
}

/* Everything the daemon's JSON says of the plan agrees with p, compiled
 * in-process from the same graph and inputs. */
static void s_check_plan(const gx_json *j, const gxd_plan *p, const gx_graph *g)
{
    char what[160];
    s_eq_str(gx_json_get(j, "graph"), g->name, "graph");
    s_eq_num(gx_json_path(j, "summary.steps"), (double)p->n_steps, "summary.steps");
    s_eq_num(gx_json_path(j, "summary.values"), (double)p->n_values, "summary.values");
    s_eq_num(gx_json_path(j, "summary.dynamic"), (double)p->n_dynamic, "summary.dynamic");

    const gx_json *steps = gx_json_get(j, "steps");
    ck_assert_uint_eq(gx_json_len(steps), p->n_steps);
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        const gx_json *js = gx_json_at(steps, i);
        snprintf(what, sizeof what, "steps[%zu] (%s)", i, s->node->name);
        s_eq_num(gx_json_get(js, "index"), (double)i, what);
        s_eq_str(gx_json_get(js, "node"), s->node->name, what);
        s_eq_str(gx_json_get(js, "op"), gx_op_name(s->op), what);
        const char *run = s->folded ? "folded" : !s->kernel ? "control flow"
                          : s->dynamic ? "dynamic" : "static";
        s_eq_str(gx_json_get(js, "run"), run, what);
        char kernel[64];
        snprintf(kernel, sizeof kernel, "cpu.%s", s->fused ? "fused" : gx_op_name(s->op));
        s_eq_str(gx_json_get(js, "kernel"), s->kernel && !s->folded ? kernel : NULL, what);
        s_eq_num(gx_json_get(js, "preds"), s->n_preds, what);
        double est = gx_json_num(gx_json_get(js, "est_us"), -1); /* 6 digits */
        ck_assert_msg(fabs(est - s->est_us) <= 1e-5 * (s->est_us > 1 ? s->est_us : 1),
                      "%s: est_us %g, want %g", what, est, s->est_us);
        ck_assert_uint_eq(gx_json_len(gx_json_get(js, "succ")), (size_t)s->n_succ);
        for (int k = 0; k < s->n_succ; k++)
            s_eq_num(gx_json_at(gx_json_get(js, "succ"), (size_t)k), s->succ[k], what);
        ck_assert_uint_eq(gx_json_len(gx_json_get(js, "outputs")), (size_t)s->n_out);
        for (int k = 0; k < s->n_out; k++)
            s_eq_str(gx_json_at(gx_json_get(js, "outputs"), (size_t)k),
                     p->values[s->out[k]].name, what);
        ck_assert_uint_eq(gx_json_len(gx_json_get(js, "inputs")), (size_t)s->n_formal);
        ck_assert_uint_eq(gx_json_len(gx_json_get(js, "captured")),
                          (size_t)(s->n_in - s->n_formal));
    }

    const gx_json *bufs = gx_json_get(j, "buffers");
    ck_assert_uint_eq(gx_json_len(bufs), p->n_values);
    for (size_t i = 0; i < p->n_values; i++) {
        const gxd_value *v = &p->values[i];
        const gx_json *b = gx_json_at(bufs, i);
        bool placed = v->kind == GXD_VALUE_INPUT || v->kind == GXD_VALUE_TEMP;
        snprintf(what, sizeof what, "buffers[%zu] (%s)", i, v->name);
        s_eq_str(gx_json_get(b, "value"), v->name, what);
        s_eq_str(gx_json_get(b, "kind"), s_kind(p, i), what);
        if (v->kind == GXD_VALUE_DYNAMIC)
            ck_assert_msg(gx_json_get(b, "bytes")->type == GX_JSON_NULL, "%s: bytes", what);
        else
            s_eq_num(gx_json_get(b, "bytes"), (double)v->nbytes, what);
        s_eq_num(gx_json_get(b, "def"), v->def, what);
        s_eq_num(gx_json_get(b, "last_use"), v->last_use, what);
        if (placed) {
            s_eq_num(gx_json_get(b, "buffer"), v->buffer, what);
            s_eq_num(gx_json_get(b, "offset"), (double)v->offset, what);
            ck_assert_msg(v->offset + v->nbytes <= p->arena_bytes, "%s outside the arena", what);
        } else {
            ck_assert_msg(gx_json_get(b, "offset")->type == GX_JSON_NULL, "%s: offset", what);
        }
        if (placed && p->dag_ok)
            s_eq_num(gx_json_get(b, "dag_offset"), (double)p->dag_offset[i], what);
        else
            ck_assert_msg(gx_json_get(b, "dag_offset")->type == GX_JSON_NULL, "%s: dag", what);
    }

    s_eq_num(gx_json_path(j, "memory.arena_bytes"), (double)p->arena_bytes, "arena_bytes");
    s_eq_num(gx_json_path(j, "memory.naive_bytes"), (double)p->naive_bytes, "naive_bytes");
    s_eq_num(gx_json_path(j, "memory.buffers"), (double)p->n_buffers, "buffers");
    ck_assert(gx_json_bool(gx_json_path(j, "memory.dag_ok"), !p->dag_ok) == p->dag_ok);
    if (p->dag_ok)
        s_eq_num(gx_json_path(j, "memory.dag_arena_bytes"), (double)p->dag_arena_bytes, "dag");
    else
        s_eq_str(gx_json_path(j, "memory.dag_why"), p->dag_why, "dag_why");
    s_eq_num(gx_json_path(j, "memory.width"), p->width, "width");
    s_eq_num(gx_json_path(j, "batch.batch"), (double)p->batch, "batch");
    s_eq_num(gx_json_path(j, "batch.sync_steps"), (double)p->sync_steps, "sync_steps");
    s_eq_str(gx_json_path(j, "batch.why"), p->batch > 0 ? NULL : p->batch_why, "batch.why");
    ck_assert(gx_json_bool(gx_json_path(j, "keyed.values_missing"), !p->needs_keys) ==
              p->needs_keys);
    size_t folded = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        folded += p->steps[i].folded;
    ck_assert_uint_eq(gx_json_len(gx_json_get(j, "folded")), folded);
}

/* The step of j that runs node (its own, or the fused step of its group). */
static const gx_json *s_step(const gx_json *j, const char *node)
{
    const gx_json *steps = gx_json_get(j, "steps");
    for (size_t i = 0; i < gx_json_len(steps); i++) {
        const gx_json *st = gx_json_at(steps, i), *fused = gx_json_get(st, "fused");
        if (strcmp(gx_json_str(gx_json_get(st, "node"), ""), node) == 0)
            return st;
        for (size_t k = 0; k < gx_json_len(fused); k++)
            if (strcmp(gx_json_str(gx_json_at(fused, k), ""), node) == 0)
                return st;
    }
    ck_abort_msg("no step '%s'", node);
    return NULL;
}

static const gx_json *s_buffer(const gx_json *j, const char *value)
{
    const gx_json *b = gx_json_get(j, "buffers");
    for (size_t i = 0; i < gx_json_len(b); i++)
        if (strcmp(gx_json_str(gx_json_get(gx_json_at(b, i), "value"), ""), value) == 0)
            return gx_json_at(b, i);
    ck_abort_msg("no buffer for '%s'", value);
    return NULL;
}

static gx_view s_view(const gx_tensor *t)
{
    gx_view v = {.dtype = gx_tensor_dtype(t), .ndim = gx_tensor_ndim(t),
                 .numel = gx_tensor_numel(t), .data = (void *)gx_tensor_cdata(t)};
    memcpy(v.shape, gx_tensor_shape(t), sizeof(int64_t) * (size_t)v.ndim);
    return v;
}

/* examples/mlp.yaml, inline and by id, with its declared shapes and with
 * the example input: one plan, described as gxd_compile builds it. */
START_TEST(test_mlp)
{
    gx_graph *g = NULL;
    gx_tensor *x = NULL;
    char err[512];
    ck_assert_msg(gx_graph_load_yaml(gxt_srcpath("examples/mlp.yaml"), &g, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_msg(gx_npy_load(gxt_srcpath("examples/mlp_input.npy"), &x, err, sizeof err) == 0,
                  "%s", err);
    gx_view in = s_view(x);
    gxd_plan *p = NULL;
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);

    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_json *j = s_explain(rq); /* no inputs: x takes its declared [1, 4] */
    s_check_plan(j, p, g);
    /* fc1 (MatMul) + fc1_bias (Add) + act1 (Relu): one fused step, an epilogue */
    s_eq_str(gx_json_get(s_step(j, "fc1"), "kernel"), "cpu.fused", "fc1");
    ck_assert_ptr_eq(s_step(j, "fc1"), s_step(j, "act1"));
    const gx_json *g0 = gx_json_at(gx_json_path(j, "fusion.groups"), 0);
    s_eq_str(gx_json_at(gx_json_get(g0, "nodes"), 0), "fc1", "group 0");
    s_eq_str(gx_json_at(gx_json_get(g0, "ops"), 2), "Relu", "group 0");
    s_eq_str(gx_json_get(s_step(j, "softmax"), "kernel"), "cpu.Softmax", "softmax");
    s_eq_str(gx_json_at(gx_json_get(s_step(j, "fc2"), "inputs"), 1), "w2@packed",
             "fc2 reads w2 packed by the prepare pass");
    s_eq_str(gx_json_get(s_buffer(j, "w1"), "kind"), "const", "w1");
    s_eq_str(gx_json_get(s_buffer(j, "x"), "kind"), "input", "x");
    ck_assert(gx_json_bool(gx_json_get(s_buffer(j, "y"), "graph_output"), false));
    gx_json_destroy(&j);

    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(s_cli, g, &id), GX_OK);
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", x);
    j = s_explain(rq);
    s_check_plan(j, p, g);
    gx_json_destroy(&j);

    gx_request_destroy(&rq);
    gxd_plan_destroy(&p);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
}
END_TEST

/* x [2,3] reshaped by the keyed input s, then back to x's shape by
 * Shape(x), which folds: y = Reshape(Relu(Reshape(x, s)), Shape(x)). */
static gx_graph *s_keyed_graph(void)
{
    gx_graph *g = gx_graph_new("keyed");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 3});
    gx_graph_add_input(g, "s", GX_I64, 1, (int64_t[]){2});
    gx_graph_add_node(g, "Shape", "shape_of_x", 1, NAMES("x"), 1, NAMES("xs"));
    gx_graph_add_node(g, "Reshape", "by_s", 2, NAMES("x", "s"), 1, NAMES("r"));
    gx_graph_add_node(g, "Relu", "relu", 1, NAMES("r"), 1, NAMES("a"));
    gx_graph_add_node(g, "Reshape", "back", 2, NAMES("a", "xs"), 1, NAMES("y"));
    gx_graph_add_output(g, "y");
    return g;
}

/* A folded step and a keyed input: with the key's value the plan is
 * static; without it, the steps after the key run dynamically and the
 * plan says the values were missing. */
START_TEST(test_folded_and_keyed)
{
    gx_graph *g = s_keyed_graph();
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){2, 3});
    gx_tensor *s = gx_tensor_new(GX_I64, 1, (int64_t[]){2});
    ((int64_t *)gx_tensor_data(s))[0] = 3;
    ((int64_t *)gx_tensor_data(s))[1] = 2;
    gx_view in[2] = {s_view(x), s_view(s)};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);

    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "s", s);
    gx_json *j = s_explain(rq);
    s_check_plan(j, p, g);
    s_eq_str(gx_json_get(s_step(j, "shape_of_x"), "run"), "folded", "Shape");
    s_eq_str(gx_json_get(s_step(j, "shape_of_x"), "kernel"), NULL, "Shape");
    s_eq_str(gx_json_get(s_step(j, "by_s"), "run"), "static", "Reshape");
    s_eq_str(gx_json_get(s_step(j, "by_s"), "kernel"), "cpu.Reshape", "Reshape");
    s_eq_str(gx_json_get(gx_json_at(gx_json_get(j, "folded"), 0), "node"), "shape_of_x", "folded");
    s_eq_str(gx_json_get(s_buffer(j, "xs"), "kind"), "const", "xs");
    s_eq_num(gx_json_get(s_buffer(j, "xs"), "def"), 0, "xs");
    const gx_json *k = gx_json_path(j, "keyed.inputs");
    ck_assert_uint_eq(gx_json_len(k), 1);
    s_eq_str(gx_json_get(gx_json_at(k, 0), "name"), "s", "keyed");
    s_eq_num(gx_json_at(gx_json_get(gx_json_at(k, 0), "value"), 0), 3, "s[0]");
    s_eq_num(gx_json_at(gx_json_get(gx_json_at(k, 0), "value"), 1), 2, "s[1]");
    s_eq_str(gx_json_get(s_buffer(j, "r"), "kind"), "temp", "r");
    s_eq_num(gx_json_at(gx_json_get(s_buffer(j, "r"), "shape"), 0), 3, "r's shape");
    gx_json_destroy(&j);
    gxd_plan_destroy(&p);

    /* s left out: its declared shape, no value */
    in[1].data = NULL;
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    gx_request_destroy(&rq);
    rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    j = s_explain(rq);
    s_check_plan(j, p, g);
    ck_assert(gx_json_bool(gx_json_path(j, "keyed.values_missing"), false));
    ck_assert_uint_eq(gx_json_len(gx_json_path(j, "keyed.inputs")), 0);
    s_eq_str(gx_json_get(s_step(j, "by_s"), "run"), "dynamic", "Reshape by s");
    s_eq_str(gx_json_get(s_step(j, "back"), "run"), "dynamic", "Reshape back");
    s_eq_str(gx_json_get(s_buffer(j, "y"), "kind"), "dynamic", "y");
    ck_assert(gx_json_get(s_buffer(j, "y"), "shape")->type == GX_JSON_NULL);
    gx_json_destroy(&j);
    gxd_plan_destroy(&p);

    gx_request_destroy(&rq);
    gx_tensor_destroy(&s);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
}
END_TEST

/* Three branches from x [4,8] joined by two Adds, then an If on c whose
 * branches capture the sum; one node's name needs JSON escapes. */
static gx_graph *s_branchy_graph(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    gx_graph_add_node(then, "Add", "twice", 2, NAMES("d2", "d2"), 1, NAMES("t"));
    gx_graph_add_output(then, "t");
    gx_graph_add_node(els, "Neg", "negate", 1, NAMES("d2"), 1, NAMES("e"));
    gx_graph_add_output(els, "e");
    gx_graph *g = gx_graph_new("branchy");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){4, 8});
    gx_graph_add_input(g, "c", GX_BOOL, 0, NULL);
    gx_graph_add_node(g, "Relu", "a \"quoted\"\tname", 1, NAMES("x"), 1,
                      NAMES("a"));
    gx_graph_add_node(g, "Sigmoid", "b", 1, NAMES("x"), 1, NAMES("b"));
    gx_graph_add_node(g, "Tanh", "c_tanh", 1, NAMES("x"), 1, NAMES("t"));
    gx_graph_add_node(g, "Add", "d1", 2, NAMES("a", "b"), 1, NAMES("d1"));
    gx_graph_add_node(g, "Add", "d2", 2, NAMES("d1", "t"), 1, NAMES("d2"));
    gx_node *n = gx_graph_add_node(g, "If", "choose", 1, NAMES("c"), 1,
                                   NAMES("y"));
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "d1");
    /* the branches' values are outputs too: fusion leaves them apart */
    gx_graph_add_output(g, "a");
    gx_graph_add_output(g, "b");
    gx_graph_add_output(g, "t");
    return g;
}

START_TEST(test_branchy)
{
    gx_graph *g = s_branchy_graph();
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){4, 8});
    gx_tensor *c = gx_tensor_new(GX_BOOL, 0, NULL);
    gx_view in[2] = {s_view(x), s_view(c)};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert(p->dag_ok);
    ck_assert_int_eq(p->width, 3);

    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "c", c);
    gx_json *j = s_explain(rq);
    s_check_plan(j, p, g);
    /* the escaped name comes back as it was */
    const gx_json *relu = s_step(j, "a \"quoted\"\tname");
    s_eq_str(gx_json_get(relu, "kernel"), "cpu.Relu", "relu");
    s_eq_num(gx_json_get(relu, "preds"), 0, "relu preds");
    s_eq_num(gx_json_get(s_step(j, "d1"), "preds"), 2, "d1 preds");
    const gx_json *choose = s_step(j, "choose");
    s_eq_str(gx_json_get(choose, "run"), "control flow", "If");
    s_eq_str(gx_json_get(choose, "kernel"), NULL, "If");
    s_eq_str(gx_json_at(gx_json_get(choose, "captured"), 0), "d2", "If captures d2");
    s_eq_num(gx_json_path(j, "memory.width"), 3, "width");
    s_eq_str(gx_json_get(s_buffer(j, "x"), "kind"), "input", "x");
    ck_assert(gx_json_bool(gx_json_get(s_buffer(j, "d1"), "graph_output"), false));
    s_eq_num(gx_json_path(j, "batch.batch"), 0, "no split");
    ck_assert_ptr_nonnull(strstr(gx_json_str(gx_json_path(j, "batch.why"), ""), "'choose'"));
    gx_json_destroy(&j);

    gx_request_destroy(&rq);
    gxd_plan_destroy(&p);
    gx_tensor_destroy(&c);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
}
END_TEST

/* A request the daemon cannot explain gets one error naming the problem. */
START_TEST(test_errors)
{
    gx_graph *g = s_keyed_graph();
    gx_tensor *bad = gx_tensor_new(GX_F32, 2, (int64_t[]){3, 3});
    gx_request *rq = gx_request_new();
    char *json = (char *)"untouched";
    ck_assert_int_eq(gx_client_explain(s_cli, rq, &json), GX_EINVAL); /* no graph */
    ck_assert_ptr_null(json);
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", bad);
    ck_assert_int_eq(gx_client_explain(s_cli, rq, &json), GX_ESHAPE);
    ck_assert_ptr_null(json);
    ck_assert_msg(strstr(gx_client_last_error(s_cli), "input 'x'"), "%s",
                  gx_client_last_error(s_cli));
    gx_request_destroy(&rq);

    rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "nope", bad);
    ck_assert_int_eq(gx_client_explain(s_cli, rq, &json), GX_EGRAPH);
    ck_assert_msg(strstr(gx_client_last_error(s_cli), "'nope'"), "%s", gx_client_last_error(s_cli));
    gx_request_destroy(&rq);
    gx_graph_destroy(&g);

    /* a symbolic dimension needs a tensor */
    g = gx_graph_new("symbolic");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 4});
    gx_graph_add_node(g, "Relu", "r", 1, NAMES("x"), 1, NAMES("y"));
    gx_graph_add_output(g, "y");
    rq = gx_request_new();
    gx_request_set_graph(rq, g);
    ck_assert_int_eq(gx_client_explain(s_cli, rq, &json), GX_ESHAPE);
    ck_assert_msg(strstr(gx_client_last_error(s_cli), "symbolic"), "%s",
                  gx_client_last_error(s_cli));
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){5, 4});
    gx_request_add_input(rq, "x", x);
    gx_json *j = s_explain(rq);
    s_eq_num(gx_json_at(gx_json_get(s_buffer(j, "y"), "shape"), 0), 5, "y's shape");
    gx_json_destroy(&j);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&bad);
    gx_graph_destroy(&g);
}
END_TEST

/* gexec-submit explain: the tables by default, the daemon's JSON with
 * --json, one line and a non-zero exit on failure. */
START_TEST(test_cli)
{
    static char out[65536];
    char mlp[512], input[512], err[512];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    snprintf(mlp, sizeof mlp, "%s", gxt_srcpath("examples/mlp.yaml"));
    snprintf(input, sizeof input, "%s", gxt_srcpath("examples/mlp_input.npy"));
    int rc = gxt_sh(out, sizeof out, "%s --socket %s explain %s -i x=%s 2>&1", bin, s_d.endpoint,
                    mlp, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    static const char *const want[] = {
        "plan of graph 'mlp': 3 steps", "steps (in run order", "cpu.fused", "cpu.Softmax",
        "fc2_bias", "buffers (offsets in the step-order arena, peak 128 B", "dag offset",
        "2..end", "start..0", "memory: arena 128 B", "out of order (inter-op): arena",
        "batch: no replica split:", "keyed inputs", "folded at compile time",
        "devices offered: cpu; 1 partition, 0 copies", "fusion: 3 values left the arena",
        "step 0: fc1, fc1_bias, act1 (MatMul, Add, Relu)"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "'%s' missing from:\n%s", want[i], out);

    rc = gxt_sh(out, sizeof out, "%s --socket %s explain %s --json", bin, s_d.endpoint, mlp);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    gx_json *j = gx_json_parse(out, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    gx_graph *g = NULL;
    ck_assert_int_eq(gx_graph_load_yaml(mlp, &g, err, sizeof err), GX_OK);
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {1, 4}, .numel = 4};
    gxd_plan *p = NULL;
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    s_check_plan(j, p, g);
    ck_assert_uint_eq(p->arena_bytes, 128); /* what the table above printed */
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gx_json_destroy(&j);

    rc = gxt_sh(out, sizeof out, "%s --socket %s explain %s -i x=%s 2>&1", bin, s_d.endpoint, mlp,
                gxt_srcpath("examples/broadcast_input.npy"));
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "GX_ESHAPE") && strstr(out, "input 'x'"), "%s", out);
    ck_assert_ptr_null(strchr(strchr(out, '\n') + 1, '\n'));
    ck_assert_int_ne(gxt_sh(out, sizeof out, "%s --socket %s explain 2>&1", bin, s_d.endpoint), 0);
    ck_assert_ptr_nonnull(strstr(out, "exactly one GRAPH"));
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s --help", bin), 0);
    ck_assert_ptr_nonnull(strstr(out, "explain GRAPH"));
}
END_TEST

/* The JSON writer's strings read back as they were written, whatever the
 * bytes; the reader refuses what is not JSON, with the place. */
START_TEST(test_json)
{
    char raw[160], err[128];
    size_t n = 0;
    for (int c = 1; c < 32; c++)
        raw[n++] = (char)c;
    static const char rest[] = "\"\\/ \xc3\xa9\xe2\x82\xac end";
    memcpy(raw + n, rest, sizeof rest); /* the NUL too */
    n += sizeof rest - 1;
    gx_strbuf b = {0};
    gx_strbuf_put(&b, "{\"s\":[", 6);
    gx_strbuf_json_str(&b, raw, n);
    gx_strbuf_printf(&b, ",%d,-1.5e3,true,null,{}]}", 42);
    ck_assert(!b.oom);
    gx_json *j = gx_json_parse(b.p, err, sizeof err);
    ck_assert_msg(j != NULL, "%s: %s", err, b.p);
    ck_assert_str_eq(gx_json_str(gx_json_at(gx_json_get(j, "s"), 0), ""), raw);
    ck_assert(gx_json_num(gx_json_at(gx_json_get(j, "s"), 1), 0) == 42);
    ck_assert(gx_json_num(gx_json_at(gx_json_get(j, "s"), 2), 0) == -1500);
    ck_assert(gx_json_bool(gx_json_at(gx_json_get(j, "s"), 3), false));
    ck_assert(gx_json_at(gx_json_get(j, "s"), 4)->type == GX_JSON_NULL);
    ck_assert_uint_eq(gx_json_len(gx_json_get(j, "s")), 6);
    gx_json_destroy(&j);
    free(b.p);

    j = gx_json_parse("\"\\u00e9\\ud83d\\ude00\\n\"", err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_str_eq(j->str, "\xc3\xa9\xf0\x9f\x98\x80\n");
    gx_json_destroy(&j);

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "unexpected end"},          {"{", "member name"},
        {"[1,]", "unexpected"},          {"\"abc", "unterminated"},
        {"{\"a\" 1}", "':'"},            {"tru", "unexpected"},
        {"1 2", "trailing"},             {"\"\\x\"", "escape"},
        {"\"a\nb\"", "control"},         {"[1 2]", "','"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(gx_json_parse(bad[i].text, err, sizeof err) == NULL, "'%s' parsed",
                      bad[i].text);
        ck_assert_msg(strstr(err, bad[i].why) && strstr(err, "at byte"), "'%s': %s", bad[i].text,
                      err);
    }
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[199] = '\0';
    ck_assert_ptr_null(gx_json_parse(deep, err, sizeof err));
    ck_assert_msg(strstr(err, "deep"), "%s", err);
}
END_TEST

Suite *explain_suite(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, s_setup, s_teardown);
    tcase_add_test(tc, test_mlp);
    tcase_add_test(tc, test_folded_and_keyed);
    tcase_add_test(tc, test_branchy);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_test(tc, test_json);
    suite_add_tcase(s, tc);
    return s;
}
