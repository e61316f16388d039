/*
 * Compiled plans on disk (daemon/compile/artifact.h, seed 004): a plan
 * written and read back runs to the same bytes as the plan compiled, in
 * every mode (sequential, intra-op, inter-op, replicas of batch slices),
 * for an MLP with fused epilogues over packed weights, a CNN whose layout
 * pass picks blocked layouts with packed Conv weights, a graph with
 * dynamic steps and one with control flow; writing the plan read back
 * gives the same file; and truncated, corrupted, version-bumped,
 * foreign-build and other-graph files are refused with a clear error.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/artifacts.h"
#include "daemon/compile/artifact.h"
#include "daemon/exec/exec.h"
#include "daemon/profile.h"
#include "daemon/team.h"
#include "ops/cpu/names.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "ops/qgemm.h"
#include "gexec/client.h"
#include "gexec/graph.h"
#include "gexec/tensor.h"
#include "core/internal.h"
#include "core/json.h"
#include "core/wire.h"
#include "tests/testdev.h"
#include "tests/testutil.h"

static const gxd_compile_limits s_lim = {.max_nodes = 10000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

/* ---- graphs ------------------------------------------------------------- */

static unsigned s_seed = 4242;

static float s_randf(void)
{
    s_seed = s_seed * 1103515245u + 12345u;
    return (float)((s_seed >> 9) % 2001) / 1000.0f - 1.0f;
}

static void s_rconst(gx_graph *g, const char *name, int ndim, const int64_t *shape, float scale)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    ck_assert_ptr_nonnull(t);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        d[i] = s_randf() * scale;
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

#define IN(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                (const char *[]) { __VA_ARGS__ }

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       const char *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, 1, &out);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* x [8, 64] -> MatMul + Add + Relu -> MatMul + Add -> Softmax: packed
 * weights, epilogues fused into the products. */
static gx_graph *s_mlp(void)
{
    gx_graph *g = gx_graph_new("mlp");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){8, 64}), GX_OK);
    s_rconst(g, "w1", 2, (const int64_t[]){64, 48}, 0.3f);
    s_rconst(g, "b1", 1, (const int64_t[]){48}, 0.1f);
    s_rconst(g, "w2", 2, (const int64_t[]){48, 10}, 0.3f);
    s_rconst(g, "b2", 1, (const int64_t[]){10}, 0.1f);
    s_node(g, "MatMul", IN("x", "w1"), "m1");
    s_node(g, "Add", IN("m1", "b1"), "a1");
    s_node(g, "Relu", IN("a1"), "r1");
    s_node(g, "MatMul", IN("r1", "w2"), "m2");
    s_node(g, "Add", IN("m2", "b2"), "a2");
    s_node(g, "Softmax", IN("a2"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* x [4, 3, 16, 16] -> Conv 3->16 + Relu -> Conv 16->32 + BN + Relu ->
 * MaxPool -> Conv 32->32 + Relu -> GlobalAveragePool -> Flatten -> Gemm ->
 * Softmax: channels in multiples of 16, so blocked layouts pay. */
static gx_graph *s_cnn(void)
{
    gx_graph *g = gx_graph_new("cnn");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){4, 3, 16, 16}),
                     GX_OK);
    s_rconst(g, "w1", 4, (const int64_t[]){16, 3, 3, 3}, 0.5f);
    s_rconst(g, "b1", 1, (const int64_t[]){16}, 0.1f);
    s_rconst(g, "w2", 4, (const int64_t[]){32, 16, 3, 3}, 0.2f);
    s_rconst(g, "scale", 1, (const int64_t[]){32}, 1.0f);
    s_rconst(g, "bias", 1, (const int64_t[]){32}, 0.1f);
    s_rconst(g, "mean", 1, (const int64_t[]){32}, 0.1f);
    gx_tensor *var = gx_tensor_new(GX_F32, 1, (const int64_t[]){32});
    for (int i = 0; i < 32; i++)
        ((float *)gx_tensor_data(var))[i] = 0.5f + 0.05f * (float)i;
    ck_assert_int_eq(gx_graph_add_const(g, "var", &var), GX_OK);
    s_rconst(g, "w3", 4, (const int64_t[]){32, 32, 3, 3}, 0.1f);
    s_rconst(g, "wf", 2, (const int64_t[]){32, 10}, 0.5f);
    s_rconst(g, "bf", 1, (const int64_t[]){10}, 0.1f);
    const int64_t pads[] = {1, 1, 1, 1};
    gx_node *c1 = s_node(g, "Conv", IN("x", "w1", "b1"), "c1");
    ck_assert_int_eq(gx_node_set_ints(c1, "pads", pads, 4), GX_OK);
    s_node(g, "Relu", IN("c1"), "r1");
    gx_node *c2 = s_node(g, "Conv", IN("r1", "w2"), "c2");
    ck_assert_int_eq(gx_node_set_ints(c2, "pads", pads, 4), GX_OK);
    s_node(g, "BatchNormalization", IN("c2", "scale", "bias", "mean", "var"), "n2");
    s_node(g, "Relu", IN("n2"), "r2");
    gx_node *mp = s_node(g, "MaxPool", IN("r2"), "p2");
    ck_assert_int_eq(gx_node_set_ints(mp, "kernel_shape", (const int64_t[]){2, 2}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(mp, "strides", (const int64_t[]){2, 2}, 2), GX_OK);
    gx_node *c3 = s_node(g, "Conv", IN("p2", "w3"), "c3");
    ck_assert_int_eq(gx_node_set_ints(c3, "pads", pads, 4), GX_OK);
    s_node(g, "Relu", IN("c3"), "r3");
    s_node(g, "GlobalAveragePool", IN("r3"), "gp");
    s_node(g, "Flatten", IN("gp"), "f");
    s_node(g, "Gemm", IN("f", "wf", "bf"), "logits");
    s_node(g, "Softmax", IN("logits"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* x [6, 8], s int64 [1024] (too big to be keyed: s_inputs gives it 8, 6,
 * 0...): y = Reshape(Relu(x), s[0:2]) * 2, whose shape is known at run
 * time only (dynamic steps); w = Cast(NonZero(x > 0)) + 1. */
static gx_graph *s_dynamic(void)
{
    gx_graph *g = gx_graph_new("dynamic");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){6, 8}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_I64, 1, (const int64_t[]){1024}), GX_OK);
    const float two = 2.0f, zero = 0.0f, one = 1.0f;
    const int64_t start = 0, end = 2;
    gxt_const(g, "two", GX_F32, 0, NULL, &two);
    gxt_const(g, "zero", GX_F32, 0, NULL, &zero);
    gxt_const(g, "one", GX_F32, 0, NULL, &one);
    gxt_const(g, "st", GX_I64, 1, (const int64_t[]){1}, &start);
    gxt_const(g, "en", GX_I64, 1, (const int64_t[]){1}, &end);
    s_node(g, "Relu", IN("x"), "r");
    s_node(g, "Slice", IN("s", "st", "en"), "sl");
    s_node(g, "Reshape", IN("r", "sl"), "rs");
    s_node(g, "Mul", IN("rs", "two"), "y");
    s_node(g, "Greater", IN("x", "zero"), "pos");
    s_node(g, "NonZero", IN("pos"), "z");
    gx_node *c = s_node(g, "Cast", IN("z"), "zf");
    ck_assert_int_eq(gx_node_set_int(c, "to", 1), GX_OK);
    s_node(g, "Add", IN("zf", "one"), "w");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "w"), GX_OK);
    return g;
}

/* x [2, 3] reshaped by the keyed input s [2] (its values shape the plan):
 * y = Relu(Reshape(x, s)). */
static gx_graph *s_keyed(void)
{
    gx_graph *g = gx_graph_new("keyed");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){2, 3}), GX_OK);
    ck_assert_int_eq(gx_graph_add_input(g, "s", GX_I64, 1, (const int64_t[]){2}), GX_OK);
    s_node(g, "Reshape", IN("x", "s"), "r");
    s_node(g, "Relu", IN("r"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

typedef struct s_case {
    const char *name;
    gx_graph *(*make)(void);
    bool replicas; /* its batch splits */
} s_case;

static gx_graph *s_if(void)
{
    return gxt_nested_if(2);
}

/* A constant of dtype dt from bytes (n elements of size es, or one scalar). */
static void s_tconst(gx_graph *g, const char *name, gx_dtype dt, int ndim, const int64_t *shape,
                     const void *v)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    ck_assert_ptr_nonnull(t);
    memcpy(gx_tensor_data(t), v, (size_t)gx_tensor_numel(t) * gx_dtype_size(dt));
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* x [2, 16, 12, 12] -> QuantizeLinear -> QLinearConv 1x1 16 -> 48 ->
 * depthwise 3x3 -> 1x1 48 -> 16 (int8 weights) -> DequantizeLinear: the
 * QLinearConvs in NHWC (on AVX-512 VNNI) from W packed for it. */
static gx_graph *s_qblock(void)
{
    gx_graph *g = gx_graph_new("qblock");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 4, (const int64_t[]){2, 16, 12, 12}),
                     GX_OK);
    const float qs = 0.02f;
    const uint8_t qz = 128;
    s_tconst(g, "qs", GX_F32, 0, NULL, &qs);
    s_tconst(g, "qz", GX_U8, 0, NULL, &qz);
    s_node(g, "QuantizeLinear", IN("x", "qs", "qz"), "xq");
    static const struct {
        const char *x, *y;
        int64_t m, cg, k, group;
    } convs[] = {{"xq", "e", 48, 16, 1, 1}, {"e", "d", 48, 1, 3, 48}, {"d", "p", 16, 48, 1, 1}};
    for (int i = 0; i < 3; i++) {
        const int64_t m = convs[i].m, n = m * convs[i].cg * convs[i].k * convs[i].k;
        int8_t w[48 * 48];
        float ws[48];
        int8_t wz[48] = {0};
        int32_t b[48];
        for (int64_t j = 0; j < n; j++)
            w[j] = (int8_t)(s_randf() * 127.0f);
        for (int64_t j = 0; j < m; j++)
            ws[j] = 0.003f, b[j] = (int32_t)(s_randf() * 200.0f);
        char nw[16], nws[16], nwz[16], nb[16];
        snprintf(nw, sizeof nw, "w%d", i), snprintf(nws, sizeof nws, "ws%d", i);
        snprintf(nwz, sizeof nwz, "wz%d", i), snprintf(nb, sizeof nb, "b%d", i);
        s_tconst(g, nw, GX_I8, 4,
                 (const int64_t[]){m, convs[i].cg, convs[i].k, convs[i].k}, w);
        s_tconst(g, nws, GX_F32, 1, (const int64_t[]){m}, ws);
        s_tconst(g, nwz, GX_I8, 1, (const int64_t[]){m}, wz);
        s_tconst(g, nb, GX_I32, 1, (const int64_t[]){m}, b);
        gx_node *q = s_node(g, "QLinearConv",
                            IN(convs[i].x, "qs", "qz", nw, nws, nwz, "qs", "qz", nb), convs[i].y);
        const int64_t pd = convs[i].k / 2;
        ck_assert_int_eq(gx_node_set_ints(q, "pads", (const int64_t[]){pd, pd, pd, pd}, 4),
                         GX_OK);
        ck_assert_int_eq(gx_node_set_int(q, "group", convs[i].group), GX_OK);
    }
    s_node(g, "DequantizeLinear", IN("p", "qs", "qz"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static const s_case s_cases[] = {
    {"mlp", s_mlp, true},
    {"cnn", s_cnn, true},
    {"dynamic", s_dynamic, false},
    {"if", s_if, false},
    {"qblock", s_qblock, false},
};

/* Inputs for g: random floats, booleans true. */
static void s_inputs(const gx_graph *g, gx_view *in, void **data)
{
    for (size_t i = 0; i < g->n_inputs; i++) {
        const gx_value_decl *d = &g->inputs[i];
        memset(&in[i], 0, sizeof in[i]);
        in[i].dtype = d->dtype;
        in[i].ndim = d->ndim;
        in[i].numel = 1;
        for (int k = 0; k < d->ndim; k++)
            in[i].numel *= in[i].shape[k] = d->shape[k];
        const size_t es = gx_dtype_size(d->dtype);
        data[i] = gx_aligned_alloc((size_t)in[i].numel * es + 1);
        for (int64_t k = 0; k < in[i].numel; k++)
            if (d->dtype == GX_F32)
                ((float *)data[i])[k] = s_randf();
            else if (d->dtype == GX_I64)
                ((int64_t *)data[i])[k] = k == 0 ? 8 : k == 1 ? 6 : 0;
            else
                memset((char *)data[i] + k * (int64_t)es, 1, es);
        in[i].data = data[i];
    }
}

/* ---- running plans ------------------------------------------------------------ */

/* The outputs of one run, concatenated bytes. */
typedef struct s_out {
    size_t n;
    char *bytes;
} s_out;

static void s_append(s_out *o, const void *p, size_t n)
{
    o->bytes = realloc(o->bytes, o->n + n + 1);
    memcpy(o->bytes + o->n, p, n);
    o->n += n;
}

/* Runs n frames of plans p[] over inputs in[] (one set per frame) with
 * cfg; appends every output of every frame to o. */
static void s_run(gxt_team *e, gxd_plan *const *p, const gx_view *const *in, int n,
                  const gxd_par_cfg *cfg, s_out *o)
{
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f[4];
    void *arena[4];
    char err[512];
    for (int r = 0; r < n; r++) {
        const size_t bytes = cfg->dag ? p[r]->dag_arena_bytes : p[r]->arena_bytes;
        arena[r] = gx_aligned_alloc(bytes + 1);
        memset(arena[r], 0xA5, bytes);
        ck_assert_msg(gxd_frame_init_ex(&f[r], p[r], arena[r], cfg->dag, in[r], &s_lim, &stop,
                                        err, sizeof err) == GX_OK,
                      "%s", err);
    }
    int rc = gxd_exec_par(&e->t, cfg, f, n, &(int){0}, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < p[r]->n_outputs; i++) {
            const gx_view *v = gxd_frame_output(&f[r], i);
            s_append(o, v->data, (size_t)v->numel * gx_dtype_size(v->dtype));
        }
        gxd_frame_fini(&f[r]);
        free(arena[r]);
    }
}

static const gxd_par_cfg s_cfgs[] = {
    {.workers = 1},                                                 /* sequential */
    {.workers = 3, .split = true, .split_min_us = 0},               /* intra */
    {.workers = 3, .dag = true},                                    /* inter */
    {.workers = 4, .dag = true, .split = true, .split_min_us = 0},  /* inter + intra */
};
static const char *const s_cfg_names[] = {"seq", "intra", "inter", "inter+intra"};

/* The replica split of a one-output plan p of a batch of b: its slices'
 * plans (gxd_plan_slice) run side by side, each on its rows of the batch. */
static void s_run_replicas(gxt_team *e, gxd_plan *p, const gx_graph *g, const gx_view *in,
                           s_out *o)
{
    ck_assert_int_gt(p->batch, 1);
    ck_assert_uint_eq(p->n_inputs, 1);
    const int64_t half = p->batch / 2;
    gx_view part[2];
    gxd_plan *sp[2];
    bool owned[2];
    char err[512];
    const size_t row = (size_t)(in->numel / in->shape[0]) * gx_dtype_size(in->dtype);
    for (int r = 0; r < 2; r++) {
        part[r] = *in;
        part[r].shape[0] = r ? p->batch - half : half;
        part[r].numel = part[r].shape[0] * (in->numel / in->shape[0]);
        part[r].data = (char *)in->data + (size_t)(r ? half : 0) * row;
        ck_assert_msg(gxd_plan_slice(p, g, &part[r], &s_lim, &sp[r], &owned[r], err,
                                     sizeof err) == GX_OK,
                      "%s", err);
    }
    const gx_view *ins[2] = {&part[0], &part[1]};
    gxd_par_cfg cfg = {.workers = 2};
    s_run(e, sp, ins, 2, &cfg, o);
    for (int r = 0; r < 2; r++)
        if (owned[r])
            gxd_plan_destroy(&sp[r]);
}

/* The limits of these tests with partition options o (filled here) that
 * put every step testdev takes on it; lim.part points at o. */
static gxd_compile_limits s_testdev_lim(gxd_partition_opts *o)
{
    *o = (gxd_partition_opts){.min_nodes = 1, .n_backends = 1, .backends = {gx_testdev()}};
    gxd_compile_limits lim = s_lim;
    lim.part = o;
    return lim;
}

/* g verified and compiled under lim for in: the plan (the caller
 * destroys it). */
static gxd_plan *s_plan_of(const gx_graph *g, const gx_view *in, const gxd_compile_limits *lim)
{
    char err[512];
    gxd_plan *p = NULL;
    ck_assert_msg(gxd_verify(g, lim, err, sizeof err) == GX_OK, "%s: %s", g->name, err);
    ck_assert_msg(gxd_compile(g, in, lim, &p, err, sizeof err) == GX_OK, "%s: %s", g->name, err);
    return p;
}

static const char *s_id(const gx_graph *g, gx_graph_id *id)
{
    gx_wire_graph_id(g, id);
    return id->hex;
}

START_TEST(round_trip_runs_the_same_bytes)
{
    const s_case *c = &s_cases[_i];
    gxt_team e;
    gxt_team_start(&e);
    gx_graph *g = c->make();
    gx_graph_id id;
    gx_view in[4];
    void *data[4];
    char err[512];
    s_inputs(g, in, data);
    gxd_plan *p = s_plan_of(g, in, &s_lim), *q = NULL;
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    ck_assert_msg(gxd_artifact_write(p, g, s_id(g, &id), &buf, &len, err, sizeof err) == GX_OK,
                  "%s: %s", c->name, err);
    ck_assert_msg(gxd_artifact_read(buf, len, g, id.hex, &s_lim, &q, err, sizeof err) == GX_OK,
                  "%s: %s", c->name, err);
    ck_assert(q->from_artifact && !p->from_artifact);
    ck_assert_uint_eq(q->n_steps, p->n_steps);
    ck_assert_uint_eq(q->arena_bytes, p->arena_bytes);
    for (size_t i = 0; i < p->n_steps; i++) {
        ck_assert_ptr_eq(q->steps[i].kernel, p->steps[i].kernel);
        ck_assert_str_eq(q->steps[i].node->name, p->steps[i].node->name);
    }
    /* the plan read back writes the same file */
    ck_assert_msg(gxd_artifact_write(q, g, id.hex, &buf2, &len2, err, sizeof err) == GX_OK, "%s",
                  err);
    ck_assert_uint_eq(len2, len);
    ck_assert(memcmp(buf, buf2, len) == 0);
    /* every mode gives the compiled plan's sequential bytes */
    const gx_view *ins[1] = {in};
    s_out ref = {0};
    s_run(&e, &p, ins, 1, &s_cfgs[0], &ref);
    for (size_t k = 0; k < sizeof s_cfgs / sizeof s_cfgs[0]; k++) {
        if (s_cfgs[k].dag && !q->dag_ok)
            continue;
        s_out got = {0};
        s_run(&e, &q, ins, 1, &s_cfgs[k], &got);
        ck_assert_uint_eq(got.n, ref.n);
        ck_assert_msg(memcmp(got.bytes, ref.bytes, ref.n) == 0, "%s: %s differs", c->name,
                      s_cfg_names[k]);
        free(got.bytes);
    }
    if (c->replicas) {
        s_out a = {0}, b = {0};
        s_run_replicas(&e, p, g, in, &a);
        s_run_replicas(&e, q, g, in, &b);
        ck_assert_uint_eq(a.n, ref.n);
        ck_assert_uint_eq(b.n, ref.n);
        ck_assert_msg(memcmp(b.bytes, a.bytes, a.n) == 0, "%s: replicas differ", c->name);
        free(a.bytes);
        free(b.bytes);
    }
    free(ref.bytes);
    if (!strcmp(c->name, "cnn")) { /* what the test is about: layouts and packed weights */
        bool layout = false;
        for (size_t i = 0; i < q->n_steps; i++)
            layout |= q->steps[i].layout != GX_LAYOUT_PLAIN;
        ck_assert(layout);
        ck_assert_uint_gt(q->n_prepared, 0);
    }
    if (!strcmp(c->name, "dynamic"))
        ck_assert_uint_gt(q->n_dynamic, 0);
    if (!strcmp(c->name, "qblock") && !strcmp(gx_cpu_qgemm_impl(), "qgemm.avx512vnni")) {
        int nhwc = 0; /* the NHWC QLinearConv kernel has a stable name */
        for (size_t i = 0; i < q->n_steps; i++)
            nhwc += q->steps[i].op == GX_OP_QLINEAR_CONV && q->steps[i].layout == GX_LAYOUT_NHWC;
        ck_assert_int_eq(nhwc, 3);
    }
    if (!strcmp(c->name, "mlp")) {
        bool fused = false;
        for (size_t i = 0; i < q->n_steps; i++)
            fused |= q->steps[i].fused && q->steps[i].fused->has_head;
        ck_assert(fused);
    }
    char *ex = gxd_plan_explain_json(q, g);
    ck_assert_ptr_nonnull(ex);
    ck_assert_ptr_nonnull(strstr(ex, "from artifact"));
    free(ex);
    free(buf);
    free(buf2);
    gxd_plan_destroy(&q);
    gxd_plan_destroy(&p);
    for (size_t i = 0; i < g->n_inputs; i++)
        free(data[i]);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

/* Plans partitioned onto testdev (memory of its own: per-device arenas,
 * constants copied to it, copy steps) round-trip: the file holds the
 * arenas' sizes and the host bytes of each device constant, the reader
 * copies them to the device through its table; the plan read runs to the
 * compiled plan's bytes in every mode (replica slices included), and
 * what testdev gave out comes back when the plans go. */
static const s_case s_dev_cases[] = {
    {"mlp", s_mlp, true},
    {"cnn", s_cnn, true},
    {"dynamic", s_dynamic, false},
};

START_TEST(device_plans_round_trip)
{
    const s_case *c = &s_dev_cases[_i];
    gxt_team e;
    gxt_team_start(&e);
    gx_graph *g = c->make();
    gx_graph_id id;
    gx_view in[4];
    void *data[4];
    char err[512];
    s_inputs(g, in, data);
    const gx_testdev_stats before = gx_testdev_stats_get();
    gxd_partition_opts o;
    const gxd_compile_limits lim = s_testdev_lim(&o);
    gxd_plan *p = s_plan_of(g, in, &lim), *q = NULL;
    ck_assert_msg(gxd_plan_off_host(p), "%s: nothing on testdev", c->name);
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    ck_assert_msg(gxd_artifact_write(p, g, s_id(g, &id), &buf, &len, err, sizeof err) == GX_OK,
                  "%s: %s", c->name, err);
    const uint64_t to_dev = gx_testdev_stats_get().to_device;
    ck_assert_msg(gxd_artifact_read(buf, len, g, id.hex, &lim, &q, err, sizeof err) == GX_OK,
                  "%s: %s", c->name, err);
    ck_assert(gxd_plan_off_host(q));
    ck_assert_uint_eq(q->n_dev_consts, p->n_dev_consts);
    ck_assert_uint_eq(gx_testdev_stats_get().to_device - to_dev, q->n_dev_consts);
    for (size_t d = 0; d < GXD_MAX_DEVICES; d++) {
        ck_assert_uint_eq(q->dev_arena_bytes[d], p->dev_arena_bytes[d]);
        ck_assert_uint_eq(q->dev_dag_arena_bytes[d], p->dev_dag_arena_bytes[d]);
    }
    for (size_t i = 0; i < p->n_steps; i++) {
        ck_assert_ptr_eq(q->steps[i].kernel, p->steps[i].kernel);
        ck_assert_int_eq(q->steps[i].device, p->steps[i].device);
    }
    for (size_t i = 0; i < p->n_values; i++)
        ck_assert_int_eq(q->values[i].mem, p->values[i].mem);
    ck_assert_msg(gxd_artifact_write(q, g, id.hex, &buf2, &len2, err, sizeof err) == GX_OK, "%s",
                  err);
    ck_assert_uint_eq(len2, len);
    ck_assert(memcmp(buf, buf2, len) == 0);
    /* in each mode the plan read gives the compiled plan's bytes (not
     * always the sequential ones: testdev's MatMul is the BLAS, whose
     * bits follow the rows a share takes) */
    const gx_view *ins[1] = {in};
    for (size_t k = 0; k < sizeof s_cfgs / sizeof s_cfgs[0]; k++) {
        if (s_cfgs[k].dag && !q->dag_ok)
            continue;
        s_out ref = {0}, got = {0};
        s_run(&e, &p, ins, 1, &s_cfgs[k], &ref);
        s_run(&e, &q, ins, 1, &s_cfgs[k], &got);
        ck_assert_uint_gt(ref.n, 0);
        ck_assert_uint_eq(got.n, ref.n);
        ck_assert_msg(memcmp(got.bytes, ref.bytes, ref.n) == 0, "%s: %s differs", c->name,
                      s_cfg_names[k]);
        free(got.bytes);
        free(ref.bytes);
    }
    if (c->replicas) {
        s_out a = {0}, b = {0};
        s_run_replicas(&e, p, g, in, &a);
        s_run_replicas(&e, q, g, in, &b);
        ck_assert_uint_eq(b.n, a.n);
        ck_assert_msg(memcmp(b.bytes, a.bytes, a.n) == 0, "%s: replicas differ", c->name);
        free(a.bytes);
        free(b.bytes);
    }
    free(buf);
    free(buf2);
    gxd_plan_destroy(&q);
    gxd_plan_destroy(&p);
    ck_assert_uint_eq(gx_testdev_stats_get().live, before.live);
    for (size_t i = 0; i < g->n_inputs; i++)
        free(data[i]);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

/* ---- refused files ------------------------------------------------------------ */

typedef struct s_file {
    gx_graph *g;
    gx_graph_id id;
    unsigned char *buf;
    size_t len;
} s_file;

static void s_file_make(s_file *f)
{
    f->g = s_cnn();
    gx_view in[1];
    void *data[1];
    char err[512];
    s_inputs(f->g, in, data);
    gxd_plan *p = s_plan_of(f->g, in, &s_lim);
    ck_assert_int_eq(gxd_artifact_write(p, f->g, s_id(f->g, &f->id), (void **)&f->buf, &f->len,
                                        err, sizeof err),
                     GX_OK);
    gxd_plan_destroy(&p);
    free(data[0]);
}

static void s_file_free(s_file *f)
{
    free(f->buf);
    gx_graph_destroy(&f->g);
}

/* Reads buf; returns the status, err the message. */
static int s_read(const s_file *f, const void *buf, size_t len, char *err, size_t errlen)
{
    gxd_plan *p = NULL;
    int rc = gxd_artifact_read(buf, len, f->g, f->id.hex, &s_lim, &p, err, errlen);
    ck_assert(rc == GX_OK ? p != NULL : p == NULL);
    gxd_plan_destroy(&p);
    return rc;
}

static void s_reseal(unsigned char *buf, size_t len)
{
    gx_artifact_put_le(buf + 24, gx_artifact_checksum(buf + GX_ARTIFACT_HEADER,
                                                      len - GX_ARTIFACT_HEADER), 8);
}

START_TEST(bad_files_are_refused)
{
    s_file f;
    s_file_make(&f);
    char err[512];
    ck_assert_int_eq(s_read(&f, f.buf, f.len, err, sizeof err), GX_OK);
    /* truncated anywhere */
    const size_t cuts[] = {0, 7, GX_ARTIFACT_HEADER - 1, GX_ARTIFACT_HEADER, f.len / 2, f.len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        ck_assert_int_eq(s_read(&f, f.buf, cuts[i], err, sizeof err), GX_EFORMAT);
        ck_assert_msg(strstr(err, "truncated") || strstr(err, "shorter") || strstr(err, "magic"),
                      "%s", err);
    }
    unsigned char *b = malloc(f.len);
    /* a flipped bit in the body: the checksum */
    for (size_t at = GX_ARTIFACT_HEADER; at < f.len; at += f.len / 97 + 1) {
        memcpy(b, f.buf, f.len);
        b[at] ^= 0x10;
        ck_assert_int_eq(s_read(&f, b, f.len, err, sizeof err), GX_EFORMAT);
        ck_assert_msg(strstr(err, "checksum"), "%s", err);
    }
    /* a value marked a view that is none (resealed): refused. The plan's
     * Flatten makes one view (its bytes are the pool's) */
    static const char no_view[] = "\xa7is_view\xc2", a_view[] = "\xa7is_view\xc3";
    int views = 0, flips = 0;
    for (size_t at = GX_ARTIFACT_HEADER; at + 9 <= f.len; at++) {
        views += memcmp(f.buf + at, a_view, 9) == 0;
        if (memcmp(f.buf + at, no_view, 9) != 0)
            continue;
        memcpy(b, f.buf, f.len);
        b[at + 8] = 0xc3;
        s_reseal(b, f.len);
        ck_assert_int_eq(s_read(&f, b, f.len, err, sizeof err), GX_EFORMAT);
        ck_assert_msg(strstr(err, "is a view, but not"), "%s", err);
        flips++;
    }
    ck_assert_int_eq(views, 1);
    ck_assert_int_gt(flips, 10);
    /* another format version; another build */
    memcpy(b, f.buf, f.len);
    gx_artifact_put_le(b + 8, GX_ARTIFACT_VERSION + 1, 4);
    ck_assert_int_eq(s_read(&f, b, f.len, err, sizeof err), GX_EVERSION);
    ck_assert_msg(strstr(err, "format version"), "%s", err);
    memcpy(b, f.buf, f.len);
    b[32 + 6] ^= 1; /* "gexec-" then the version */
    ck_assert_int_eq(s_read(&f, b, f.len, err, sizeof err), GX_EVERSION);
    ck_assert_msg(strstr(err, "another build"), "%s", err);
    /* another graph: stale */
    gx_graph *g2 = s_mlp();
    gx_graph_id id2;
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_artifact_read(f.buf, f.len, g2, s_id(g2, &id2), &s_lim, &p, err,
                                       sizeof err),
                     GX_ENOTFOUND);
    ck_assert_msg(strstr(err, "for graph"), "%s", err);
    ck_assert_int_eq(gxd_artifact_read(f.buf, f.len, g2, f.id.hex, &s_lim, &p, err, sizeof err),
                     GX_ENOTFOUND); /* the right id, the wrong graph: its nodes differ */
    gx_graph_destroy(&g2);
    free(b);
    s_file_free(&f);
}
END_TEST

/* A prepared constant recorded as made from another graph constant
 * (resealed): where this build would prepare that one to another size,
 * refused (a plan of a build that packed differently never reaches the
 * kernels); the same size reads. */
START_TEST(prepared_constants_of_another_form_are_refused)
{
    s_file f;
    s_file_make(&f);
    unsigned char *b = malloc(f.len);
    char err[512];
    static const char key[] = "\xa6source";
    int sources = 0, refused = 0;
    for (size_t at = GX_ARTIFACT_HEADER; at + 8 <= f.len; at++) {
        if (memcmp(f.buf + at, key, 7) != 0 || f.buf[at + 7] >= 0x80)
            continue; /* a source as a positive fixint */
        sources++;
        for (unsigned char v = 0; v < 64; v++) {
            if (v == f.buf[at + 7])
                continue;
            memcpy(b, f.buf, f.len);
            b[at + 7] = v;
            s_reseal(b, f.len);
            const int rc = s_read(&f, b, f.len, err, sizeof err);
            ck_assert_msg(rc == GX_OK || rc == GX_EFORMAT, "source %u: %d %s", v, rc, err);
            refused += rc == GX_EFORMAT && strstr(err, "this build prepares") != NULL;
        }
    }
    ck_assert_int_gt(sources, 0);
    ck_assert_int_gt(refused, 0);
    free(b);
    s_file_free(&f);
}
END_TEST

START_TEST(resealed_corruption_never_runs_wild)
{
    /* a hostile file: bits flipped and the checksum made right again; the
     * reader refuses or reads something its checks accept, never more
     * (the sanitizer build checks the "never more") */
    s_file f;
    s_file_make(&f);
    unsigned char *b = malloc(f.len);
    char err[512];
    unsigned x = 7;
    int refused = 0, n = 0;
    for (size_t at = GX_ARTIFACT_HEADER; at < f.len; at += 1 + (x = x * 1103515245u + 12345u) % 61) {
        memcpy(b, f.buf, f.len);
        b[at] ^= (unsigned char)(1u << (x >> 16) % 8);
        s_reseal(b, f.len);
        refused += s_read(&f, b, f.len, err, sizeof err) < 0;
        n++;
    }
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(n, 100);
    free(b);
    s_file_free(&f);
}
END_TEST

/* A testdev plan's file: truncated, flipped or resealed with a value
 * moved to another memory, refused; random resealed corruption refused
 * or read within the checks; nothing testdev gave out is left over. */
START_TEST(device_files_are_checked)
{
    s_file f = {.g = s_mlp()};
    gx_view in[1];
    void *data[1];
    char err[512];
    s_inputs(f.g, in, data);
    const gx_testdev_stats before = gx_testdev_stats_get();
    gxd_partition_opts o;
    const gxd_compile_limits lim = s_testdev_lim(&o);
    gxd_plan *p = s_plan_of(f.g, in, &lim);
    ck_assert_msg(gxd_artifact_write(p, f.g, s_id(f.g, &f.id), (void **)&f.buf, &f.len, err,
                                     sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_uint_gt(p->n_dev_consts, 0);
    gxd_plan_destroy(&p);
    ck_assert_int_eq(s_read(&f, f.buf, f.len, err, sizeof err), GX_OK);
    const size_t cuts[] = {GX_ARTIFACT_HEADER - 1, GX_ARTIFACT_HEADER, f.len / 3, f.len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        ck_assert_int_eq(s_read(&f, f.buf, cuts[i], err, sizeof err), GX_EFORMAT);
    unsigned char *b = malloc(f.len);
    /* each value's memory moved, host <-> testdev (resealed): refused */
    static const char on_host[] = "\xa3mem\x00", on_dev[] = "\xa3mem\x01";
    int moved[2] = {0, 0};
    for (size_t at = GX_ARTIFACT_HEADER; at + 5 <= f.len; at++) {
        const bool host = memcmp(f.buf + at, on_host, 5) == 0;
        if (!host && memcmp(f.buf + at, on_dev, 5) != 0)
            continue;
        memcpy(b, f.buf, f.len);
        b[at + 4] = host ? 1 : 0;
        s_reseal(b, f.len);
        ck_assert_msg(s_read(&f, b, f.len, err, sizeof err) == GX_EFORMAT, "moved %s at %zu: read",
                      host ? "to testdev" : "to the host", at);
        ck_assert_msg(strstr(err, "memory") || strstr(err, "device") || strstr(err, "arena") ||
                          strstr(err, "constant"),
                      "%s", err);
        moved[host]++;
    }
    ck_assert_int_gt(moved[0], 0);
    ck_assert_int_gt(moved[1], 0);
    /* random flips, resealed */
    unsigned x = 11;
    int refused = 0, n = 0;
    for (size_t at = GX_ARTIFACT_HEADER; at < f.len; at += 1 + (x = x * 1103515245u + 12345u) % 37) {
        memcpy(b, f.buf, f.len);
        b[at] ^= (unsigned char)(1u << (x >> 16) % 8);
        s_reseal(b, f.len);
        refused += s_read(&f, b, f.len, err, sizeof err) < 0;
        n++;
    }
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(n, 50);
    ck_assert_uint_eq(gx_testdev_stats_get().live, before.live);
    /* explain --artifact shows testdev's arenas and constants */
    static char out[1 << 16];
    char *dir = gxt_tmpdir(), path[4200];
    snprintf(path, sizeof path, "%s/plan.gxa", dir);
    FILE *fp = fopen(path, "wb");
    ck_assert(fp && fwrite(f.buf, 1, f.len, fp) == f.len && fclose(fp) == 0);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s/libclient/gexec-submit explain --artifact %s 2>&1",
                            GX_TEST_BUILDDIR, path),
                     0);
    ck_assert_msg(strstr(out, "testdev: arena ") && strstr(out, ", 4 constants copied there"),
                  "%s", out);
    gxt_rmtree(dir);
    free(dir);
    free(b);
    free(data[0]);
    s_file_free(&f);
}
END_TEST

/* A plan read from an artifact keeps no layout problem: when its layout
 * pass had a choice (layout_open, kept in the file), the re-planner's
 * question says "stale" once there is a profile, and the compile from the
 * graph with that profile is not stale again; a plan whose layouts were
 * not free (the MLP) never is. */
START_TEST(artifact_plans_are_replanned_from_the_graph)
{
    for (int k = 0; k < 2; k++) {
        gx_graph *g = k ? s_mlp() : s_cnn();
        gx_graph_id id;
        gx_view in[1];
        void *data[1];
        char err[512], why[512];
        s_inputs(g, in, data);
        gxd_plan *p = s_plan_of(g, in, &s_lim), *q = NULL, *np = NULL;
        ck_assert(p->layout_open == !k);
        void *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(gxd_artifact_write(p, g, s_id(g, &id), &buf, &len, err, sizeof err),
                         GX_OK);
        ck_assert_int_eq(gxd_artifact_read(buf, len, g, id.hex, &s_lim, &q, err, sizeof err),
                         GX_OK);
        ck_assert(q->layout_open == p->layout_open);
        gxd_profile *prof = gxd_profile_new("00");
        prof->jobs = 10;
        for (size_t i = 0; i < g->n_nodes; i++)
            ck_assert_int_eq(gxd_profile_add(prof, g->nodes[i]->name, 10, 10000), GX_OK);
        gxd_profile_finish(prof);
        ck_assert(!gxd_plan_layout_stale(q, NULL, why, sizeof why)); /* no profile yet */
        ck_assert(gxd_plan_layout_stale(q, prof, why, sizeof why) == !k);
        if (!k)
            ck_assert_msg(strstr(why, "read from an artifact"), "%s", why);
        gxd_compile_limits lim = s_lim;
        lim.profile = prof;
        ck_assert_msg(gxd_compile(g, in, &lim, &np, err, sizeof err) == GX_OK, "%s", err);
        ck_assert(!gxd_plan_layout_stale(np, prof, why, sizeof why));
        gxd_plan_destroy(&np);
        gxd_plan_destroy(&q);
        gxd_plan_destroy(&p);
        gxd_profile_destroy(&prof);
        free(buf);
        free(data[0]);
        gx_graph_destroy(&g);
    }
}
END_TEST

/* A slice's plan written and read back for its whole plan runs to the
 * same bytes and reads the whole plan's prepared constants in place (as a
 * compiled slice does), where a plain read holds copies. */
START_TEST(slice_plans_share_the_whole_plans_constants)
{
    gxt_team e;
    gxt_team_start(&e);
    gx_graph *g = s_cnn();
    gx_graph_id id;
    gx_view in[1];
    void *data[1];
    char err[512];
    s_inputs(g, in, data);
    gxd_plan *p = s_plan_of(g, in, &s_lim), *sp = NULL, *q = NULL, *c = NULL;
    bool owned = false;
    gx_view half = in[0];
    half.shape[0] = in[0].shape[0] / 2;
    half.numel = in[0].numel / 2;
    ck_assert_msg(gxd_plan_slice(p, g, &half, &s_lim, &sp, &owned, err, sizeof err) == GX_OK,
                  "%s", err);
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(gxd_artifact_write(sp, g, s_id(g, &id), &buf, &len, err, sizeof err), GX_OK);
    ck_assert_msg(gxd_artifact_read_slice(buf, len, g, id.hex, &s_lim, p, &q, err, sizeof err) ==
                      GX_OK, "%s", err);
    ck_assert_int_eq(gxd_artifact_read(buf, len, g, id.hex, &s_lim, &c, err, sizeof err), GX_OK);
    int shared = 0;
    for (size_t i = 0; i < q->n_values; i++) {
        const gxd_value *v = &q->values[i];
        for (size_t k = 0; v->kind == GXD_VALUE_CONST && v->view.data && k < p->n_values; k++)
            if (p->values[k].view.data == v->view.data && !strcmp(p->values[k].name, v->name)) {
                bool graphs = false; /* the graph's own constants are shared anyway */
                for (size_t t = 0; t < g->n_consts; t++)
                    graphs = graphs || g->consts[t].t->data == v->view.data;
                shared += !graphs;
                ck_assert(c->values[i].view.data != v->view.data || graphs);
            }
    }
    ck_assert_int_gt(shared, 0);
    s_out a = {0}, b = {0};
    const gx_view *ins[1] = {&half};
    s_run(&e, &sp, ins, 1, &s_cfgs[0], &a);
    s_run(&e, &q, ins, 1, &s_cfgs[0], &b);
    ck_assert(a.n == b.n && memcmp(a.bytes, b.bytes, a.n) == 0);
    free(a.bytes), free(b.bytes), free(buf), free(data[0]);
    gxd_plan_destroy(&q);
    gxd_plan_destroy(&c);
    if (owned)
        gxd_plan_destroy(&sp);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    gxt_team_stop(&e);
}
END_TEST

START_TEST(kernel_names_round_trip)
{
    for (int op = 0; op < GX_OP_COUNT; op++) {
        gx_kernel_fn fn = gx_cpu_kernel((gx_op)op);
        if (!fn)
            continue;
        const char *name = gx_cpu_kernel_name(fn);
        ck_assert_ptr_nonnull(name);
        ck_assert_ptr_eq(gx_cpu_kernel_by_name(name), fn);
    }
    const gx_kernel_fn more[] = {gx_cpu_reorder, gx_cpu_gemm_packed_kernel(GX_OP_MATMUL),
                                 gx_cpu_gemm_packed_kernel(GX_OP_GEMM)};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        ck_assert_ptr_eq(gx_cpu_kernel_by_name(gx_cpu_kernel_name(more[i])), more[i]);
    for (int i = 0; gx_cpu_gemm_isa_name(i); i++) {
        gx_kernel_fn fn = gx_cpu_gemm_packed_kernel_isa(GX_OP_MATMUL, gx_cpu_gemm_isa_name(i));
        ck_assert_ptr_eq(gx_cpu_kernel_by_name(gx_cpu_kernel_name(fn)), fn);
    }
    ck_assert_ptr_null(gx_cpu_kernel_name(NULL));
    ck_assert_ptr_null(gx_cpu_kernel_by_name("cpu.NoSuchOp@1"));
    ck_assert_str_eq(gx_cpu_kernel_name(gx_cpu_kernel(GX_OP_CONV)), "cpu.Conv@1");
}
END_TEST

/* gexec-submit explain --artifact: the file's header, graph, steps with
 * their kernels and the constants, read by the client without a daemon;
 * --json for tools; a corrupt file is shown marked and exits 1; hostile
 * resealed files never crash it. */
START_TEST(explain_artifact_prints_the_file)
{
    static char out[1 << 17];
    char *dir = gxt_tmpdir(), path[4200], err[512];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    s_file f;
    s_file_make(&f);
    snprintf(path, sizeof path, "%s/plan.gxa", dir);
    FILE *fp = fopen(path, "wb");
    ck_assert(fp && fwrite(f.buf, 1, f.len, fp) == f.len && fclose(fp) == 0);
    int rc = gxt_sh(out, sizeof out, "%s explain --artifact %s 2>&1", bin, path);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    char want_graph[128];
    snprintf(want_graph, sizeof want_graph, "graph %s on cpu", f.id.hex);
    const char *const want[] = {"format version 2", gxd_artifact_build_id(), "checksum ok",
                                want_graph, "steps (in run order)", "cpu.Conv", "[fused ",
                                "constants: ", "the graph's constant 'w1'", "in the file ("};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "'%s' missing from:\n%s", want[i], out);
    rc = gxt_sh(out, sizeof out, "%s explain --artifact %s --json", bin, path);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    gx_json *j = gx_json_parse(out, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_str_eq(gx_json_str(gx_json_get(j, "checksum"), ""), "ok");
    ck_assert_str_eq(gx_json_str(gx_json_path(j, "body.graph"), ""), f.id.hex);
    ck_assert_uint_gt(gx_json_len(gx_json_path(j, "body.steps")), 5);
    gx_json_destroy(&j);
    /* a flipped bit: shown, marked, exit 1 */
    unsigned char *b = malloc(f.len);
    memcpy(b, f.buf, f.len);
    b[f.len - 3] ^= 0x40;
    fp = fopen(path, "wb");
    ck_assert(fp && fwrite(b, 1, f.len, fp) == f.len && fclose(fp) == 0);
    rc = gxt_sh(out, sizeof out, "%s explain --artifact %s 2>&1", bin, path);
    ck_assert_msg(rc == 1 && strstr(out, "checksum mismatch"), "exit %d: %s", rc, out);
    /* truncated; not an artifact */
    ck_assert_int_eq(gxt_sh(out, sizeof out, "head -c 5000 %s > %s.cut && %s explain --artifact "
                                             "%s.cut 2>&1", path, path, bin, path), 1);
    ck_assert_msg(strstr(out, "truncated"), "%s", out);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "%s explain --artifact %s 2>&1", bin,
                            gxt_srcpath("examples/mlp.yaml")), 1);
    ck_assert_msg(strstr(out, "not a gexec artifact"), "%s", out);
    /* hostile: bits flipped, checksum made right; exit 0 or 1, never a crash */
    unsigned x = 11;
    for (int k = 0; k < 24; k++) {
        memcpy(b, f.buf, f.len);
        for (int q = 0; q < 4; q++) {
            x = x * 1103515245u + 12345u;
            b[GX_ARTIFACT_HEADER + (x >> 8) % (f.len - GX_ARTIFACT_HEADER)] ^= (unsigned char)x;
        }
        s_reseal(b, f.len);
        fp = fopen(path, "wb");
        ck_assert(fp && fwrite(b, 1, f.len, fp) == f.len && fclose(fp) == 0);
        rc = gxt_sh(out, sizeof out, "%s explain --artifact %s >/dev/null 2>%s.err; "
                                     "s=$?; cat %s.err; exit $s", bin, path, path, path);
        ck_assert_msg((rc == 0 || rc == 1) && !strstr(out, "Sanitizer"), "exit %d: %s", rc, out);
    }
    free(b);
    /* a plan file whose constants are in a constants file: named */
    gx_view in[1];
    void *data[1];
    s_inputs(f.g, in, data);
    gxd_plan *p = s_plan_of(f.g, in, &s_lim);
    void *pb, *cb;
    size_t pl, cl;
    char cname[GX_ARTIFACT_CONSTS + 1], want_c[256];
    ck_assert_int_eq(gxd_artifact_write_split(p, f.g, f.id.hex, &pb, &pl, &cb, &cl, cname, err,
                                              sizeof err),
                     GX_OK);
    fp = fopen(path, "wb");
    ck_assert(fp && fwrite(pb, 1, pl, fp) == pl && fclose(fp) == 0);
    rc = gxt_sh(out, sizeof out, "%s explain --artifact %s 2>&1", bin, path);
    snprintf(want_c, sizeof want_c, "prepared constants in %s-%s.gxc", f.id.hex, cname);
    ck_assert_msg(rc == 0 && strstr(out, want_c) && strstr(out, "in constants file"), "exit %d: %s",
                  rc, out);
    free(pb), free(cb), free(data[0]);
    gxd_plan_destroy(&p);
    s_file_free(&f);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- through gexecd -------------------------------------------------------------- */

/* A client of the daemon at endpoint, 30 s per reply. */
static gx_client *s_connect(const char *endpoint)
{
    char err[512];
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 30000);
    return c;
}

/* One RUN of g in mode on the daemon at endpoint (replica: until one ran
 * in slices): the output's bytes (malloc'ed, *n of them), the compile
 * time, and the plan's explain text. */
static char *s_daemon_run(const char *endpoint, const gx_graph *g, const gx_tensor *x,
                          gx_mode mode, size_t *n, int64_t *compile_us, char **explain)
{
    gx_client *c = s_connect(endpoint);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "x", x), GX_OK);
    ck_assert_int_eq(gx_request_set_mode(rq, mode), GX_OK);
    gx_result *r = NULL;
    /* replicas: slices of the batch, each with its plan. The policy counts
     * the helpers waiting for work when the job starts; right after start
     * the other worker may not wait yet (a busy machine), and the job runs
     * whole: run it again until one ran in slices (compile_us: all runs') */
    *compile_us = 0;
    for (int tries = 0;; tries++) {
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
        ck_assert_msg(gx_result_status(r) == GX_OK, "%s", gx_result_message(r));
        *compile_us += gx_result_info(r)->compile_us;
        if (mode != GX_MODE_REPLICA || gx_result_info(r)->replicas > 1 || tries == 200)
            break;
        gx_result_destroy(&r);
    }
    if (mode == GX_MODE_REPLICA)
        ck_assert_int_gt(gx_result_info(r)->replicas, 1);
    const gx_tensor *y = gx_result_output(r, 0);
    *n = (size_t)gx_tensor_numel(y) * gx_dtype_size(gx_tensor_dtype(y));
    char *bytes = malloc(*n);
    memcpy(bytes, gx_tensor_data((gx_tensor *)y), *n);
    gx_result_destroy(&r);
    ck_assert_int_eq(gx_client_explain(c, rq, explain), GX_OK);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return bytes;
}

/* STATS as JSON text (caller frees). */
static char *s_stats(const char *endpoint)
{
    char err[512], *json = NULL;
    gx_client *c = gx_client_new(endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    gx_client_destroy(&c);
    return json;
}

/* Waits until the daemon's artifact writer has nothing queued or under
 * way (it writes after the replies: a poll of what it says, no sleep). */
static void s_wait_written(const char *endpoint)
{
    for (int i = 0;; i++) {
        char *st = s_stats(endpoint);
        const bool idle = strstr(st, "\"queued\":0,") != NULL;
        ck_assert_msg(idle || i < 100000, "%s", st);
        free(st);
        if (idle)
            return;
    }
}

/* Modes of the restart test: the plan read back under the DAG executor;
 * replicas, whose slices' plans are read back too. */
static const gx_mode s_modes[] = {GX_MODE_INTER, GX_MODE_REPLICA};

/* _i 0, 1: gexecd (the CPU) in s_modes[_i]; 2, 3: gexecd-testdev with
 * every step it can take on testdev (memory of its own: the artifacts
 * hold its arenas and the bytes of its constants). */
START_TEST(restarted_daemon_serves_from_artifact)
{
    char *dir = gxt_tmpdir(), profiles[4200], out[4096], conf[4200];
    snprintf(profiles, sizeof profiles, "%s/profiles", dir);
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    const bool dev = _i >= 2;
    FILE *cf = fopen(conf, "w");
    ck_assert_ptr_nonnull(cf);
    if (dev)
        fputs("partition:\n  prefer: [testdev, cpu]\n  min_nodes: 1\n  cost_check: false\n", cf);
    fclose(cf);
    const char *args[] = {"-c", conf, "--profile-dir", profiles, NULL};
    if (dev)
        setenv("GEXECD", GX_TEST_BUILDDIR "/tests/gexecd-testdev", 1);
    gx_graph *g = s_cnn();
    gx_tensor *x = gx_tensor_new(GX_F32, 4, (const int64_t[]){4, 3, 16, 16});
    for (int64_t i = 0; i < gx_tensor_numel(x); i++)
        ((float *)gx_tensor_data(x))[i] = s_randf();
    size_t n0, n1, n2;
    int64_t us0, us1, us2;
    char *ex0, *ex1, *ex2;
    /* first daemon: compiles, writes the artifact */
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    char *y0 = s_daemon_run(d.endpoint, g, x, s_modes[_i % 2], &n0, &us0, &ex0);
    ck_assert_msg(!strstr(ex0, "\"testdev\"") == !dev, "%.300s", ex0);
    s_wait_written(d.endpoint);
    /* one file for the plan, and (replicas) one per slice size: "<key>-<rows>" */
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls %s/artifacts | grep -c '\\.gxa$'", dir), 0);
    const int files = atoi(out);
    ck_assert_int_eq(files > 1, s_modes[_i % 2] == GX_MODE_REPLICA);
    char want[64];
    snprintf(want, sizeof want, "\"writes\":%d,", files);
    char *st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, want), "%s: %s", want, st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_gt(us0, 0);
    ck_assert_ptr_nonnull(strstr(ex0, "\"source\":\"compiled\""));
    /* a new daemon on the same directory: no compile, the same bytes */
    gxt_daemon_start(&d, args);
    char *y1 = s_daemon_run(d.endpoint, g, x, s_modes[_i % 2], &n1, &us1, &ex1);
    st = s_stats(d.endpoint);
    snprintf(want, sizeof want, "\"hits\":%d,", files);
    ck_assert_msg(strstr(st, want) && strstr(st, "\"plans_compiled\":0"), "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_eq(us1, 0); /* slices' plans included */
    ck_assert_msg(strstr(ex1, "\"source\":\"from artifact\""), "%.300s", ex1);
    ck_assert_uint_eq(n1, n0);
    ck_assert(memcmp(y1, y0, n0) == 0);
    /* a corrupt file (the plan's): refused, compiled again, written again */
    ck_assert_int_eq(gxt_sh(out, sizeof out,
                            "f=$(ls %s/artifacts/*.gxa | grep -E -- '-[0-9a-f]{16}\\.gxa$') && "
                            "printf 'XXXX' | "
                            "dd of=\"$f\" bs=1 seek=200 conv=notrunc 2>/dev/null",
                            dir),
                     0);
    gxt_daemon_start(&d, args);
    char *y2 = s_daemon_run(d.endpoint, g, x, s_modes[_i % 2], &n2, &us2, &ex2);
    s_wait_written(d.endpoint);
    st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, "\"rejected\":1") && strstr(st, "\"writes\":1"), "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_gt(us2, 0);
    ck_assert(n2 == n0 && memcmp(y2, y0, n0) == 0);
    free(y0), free(y1), free(y2), free(ex0), free(ex1), free(ex2);
    unsetenv("GEXECD");
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* The whole file at path (malloc'ed, *n bytes), or NULL. */
/* A restarted gexecd serves a layout-free plan from its artifact, then its
 * re-planner (every 10 ms, after one job) compiles it from the graph with
 * the profile, swaps it in and writes its artifact again, which the next
 * restart serves. Jobs run until explain says so (no timing assumed). */
START_TEST(restarted_daemon_replans_artifact_plans)
{
    char *dir = gxt_tmpdir(), conf[4200], out[256];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *cf = fopen(conf, "w");
    ck_assert_ptr_nonnull(cf);
    fprintf(cf, "profile:\n  dir: \"%s/profiles\"\n"
                "compiler:\n  replan: true\n  replan_ms: 10\n  replan_min_jobs: 1\n",
            dir);
    fclose(cf);
    const char *args[] = {"-c", conf, NULL};
    /* the first daemon does not re-plan: its file is the compiled plan's */
    char conf0[4200];
    snprintf(conf0, sizeof conf0, "%s/gexecd0.yaml", dir);
    cf = fopen(conf0, "w");
    ck_assert_ptr_nonnull(cf);
    fprintf(cf, "profile:\n  dir: \"%s/profiles\"\ncompiler:\n  replan: false\n", dir);
    fclose(cf);
    const char *args0[] = {"-c", conf0, NULL};
    gx_graph *g = s_cnn();
    gx_tensor *x = gx_tensor_new(GX_F32, 4, (const int64_t[]){4, 3, 16, 16});
    for (int64_t i = 0; i < gx_tensor_numel(x); i++)
        ((float *)gx_tensor_data(x))[i] = s_randf();
    size_t n;
    int64_t us;
    char *ex, *y;
    gxt_daemon d;
    gxt_daemon_start(&d, args0);
    y = s_daemon_run(d.endpoint, g, x, GX_MODE_INTER, &n, &us, &ex);
    free(y), free(ex);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    /* restarted: from the artifact, then re-planned from the graph (the
     * re-planner may swap its plan in before the job's EXPLAIN: the
     * artifact's use is the job's compile_us and STATS' hit) */
    gxt_daemon_start(&d, args);
    y = s_daemon_run(d.endpoint, g, x, GX_MODE_INTER, &n, &us, &ex);
    ck_assert_int_eq(us, 0);
    char *st0 = s_stats(d.endpoint);
    ck_assert_msg(strstr(st0, "\"hits\":1,"), "%s", st0);
    free(st0);
    bool compiled = false;
    for (int i = 0; i < 100000 && !compiled; i++) {
        free(y), free(ex);
        y = s_daemon_run(d.endpoint, g, x, GX_MODE_INTER, &n, &us, &ex);
        compiled = strstr(ex, "\"source\":\"compiled\"") != NULL;
    }
    ck_assert(compiled);
    ck_assert_int_eq(us, 0); /* the job did not compile: the re-planner did */
    free(y), free(ex);
    bool written = false; /* the re-planner writes after the swap */
    for (int i = 0; i < 100000 && !written; i++) {
        char *st = s_stats(d.endpoint);
        written = strstr(st, "\"writes\":1,") != NULL;
        free(st);
    }
    ck_assert(written);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls %s/artifacts | grep -c '\\.gxa$'", dir), 0);
    ck_assert_int_eq(atoi(out), 1); /* replaced, not added */
    /* the next restart serves the re-planned plan's file */
    gxt_daemon_start(&d, args);
    y = s_daemon_run(d.endpoint, g, x, GX_MODE_INTER, &n, &us, &ex);
    ck_assert_int_eq(us, 0);
    st0 = s_stats(d.endpoint);
    ck_assert_msg(strstr(st0, "\"hits\":1,"), "%s", st0);
    free(st0);
    free(y), free(ex);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

static unsigned char *s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

/* COMPILE of g with x by shape alone: the artifact's bytes (*n) and key. */
static void *s_compile(const char *endpoint, const gx_graph *g, size_t *n, char *key, int *rc,
                       char *err, size_t errlen)
{
    gx_client *c = s_connect(endpoint);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
    ck_assert_int_eq(gx_request_add_input_shape(rq, "x", GX_F32, 4, (const int64_t[]){4, 3, 16, 16}),
                     GX_OK);
    void *buf = NULL;
    *rc = gx_client_compile(c, rq, &buf, n, key, 96);
    snprintf(err, errlen, "%s", gx_client_last_error(c));
    /* a RUN needs values: a shape alone is refused before it is sent */
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_EINVAL);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return buf;
}

/* COMPILE: the artifact of a graph for given shapes without running it,
 * the bytes the daemon's cache holds under the key it answers; a daemon
 * that finds that file under that name serves the graph without compiling;
 * gexec-submit compile -o writes it and explain --artifact reads it. */
START_TEST(compile_request_answers_the_artifact)
{
    static char out[1 << 16];
    char *dir = gxt_tmpdir(), profiles[4200], path[4200], key[96], err[1024];
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    snprintf(profiles, sizeof profiles, "%s/a/profiles", dir);
    const char *args[] = {"--profile-dir", profiles, NULL};
    gx_graph *g = s_cnn();
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    size_t n = 0, m = 0;
    int rc;
    unsigned char *buf = s_compile(d.endpoint, g, &n, key, &rc, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    gx_graph_id id;
    ck_assert_int_eq(strncmp(key, s_id(g, &id), 64), 0);
    ck_assert_int_eq(key[64], '-');
    /* the answer holds everything; the cache's file (written after the
     * reply) names its constants file instead of holding them */
    s_wait_written(d.endpoint);
    snprintf(path, sizeof path, "%s/a/artifacts/%s.gxa", dir, key);
    unsigned char *file = s_slurp(path, &m);
    ck_assert_msg(file != NULL, "no %s", path);
    gx_artifact_header ha, hc;
    ck_assert_int_eq(gx_artifact_header_read(buf, n, &ha, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_artifact_header_read(file, m, &hc, err, sizeof err), GX_OK);
    ck_assert_str_eq(ha.consts, "");
    ck_assert_uint_eq(strlen(hc.consts), 16);
    ck_assert_uint_lt(m, n);
    free(file);
    /* cached now: the same bytes again */
    unsigned char *again = s_compile(d.endpoint, g, &m, key, &rc, err, sizeof err);
    ck_assert(rc == GX_OK && m == n && memcmp(again, buf, n) == 0);
    free(again);
    /* gexec-submit compile -o, then explain --artifact on the file */
    int x = gxt_sh(out, sizeof out, "%s --socket %s compile %s --shape x=1x3x32x32 -o %s/cnn.gxa "
                                    "&& %s explain --artifact %s/cnn.gxa 2>&1",
                   bin, d.endpoint, gxt_srcpath("examples/cnn.yaml"), dir, bin, dir);
    ck_assert_msg(x == 0 && strstr(out, "artifacts.dir name: ") && strstr(out, "checksum ok") &&
                      strstr(out, "cpu.MaxPool"),
                  "exit %d: %s", x, out);
    x = gxt_sh(out, sizeof out, "%s --socket %s compile %s --shape x=1x3 -o %s/bad.gxa 2>&1", bin,
               d.endpoint, gxt_srcpath("examples/cnn.yaml"), dir);
    ck_assert_msg(x != 0 && strstr(out, "GX_ESHAPE"), "exit %d: %s", x, out);
    /* a keyed input without its values: refused, saying so */
    gx_graph *k = s_keyed();
    gx_client *c = s_connect(d.endpoint);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, k), GX_OK);
    void *kb = NULL;
    ck_assert_int_eq(gx_client_compile(c, rq, &kb, &m, NULL, 0), GX_EUNSUPPORTED);
    ck_assert_msg(strstr(gx_client_last_error(c), "keyed"), "%s", gx_client_last_error(c));
    ck_assert_ptr_null(kb);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    gx_graph_destroy(&k);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    /* another daemon that finds the file under its name: no compile */
    snprintf(profiles, sizeof profiles, "%s/b/profiles", dir);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "mkdir -p %s/b/artifacts", dir), 0);
    snprintf(path, sizeof path, "%s/b/artifacts/%s.gxa", dir, key);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(buf, 1, n, f) == n && fclose(f) == 0);
    gxt_daemon_start(&d, args);
    gx_tensor *t = gx_tensor_new(GX_F32, 4, (const int64_t[]){4, 3, 16, 16});
    char *ex = NULL;
    int64_t us = -1;
    char *y = s_daemon_run(d.endpoint, g, t, GX_MODE_INTER, &m, &us, &ex);
    ck_assert_int_eq(us, 0);
    ck_assert_msg(strstr(ex, "\"source\":\"from artifact\""), "%.300s", ex);
    char *st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, "\"hits\":1") && strstr(st, "\"plans_compiled\":0"), "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    free(y), free(ex), free(buf);
    gx_tensor_destroy(&t);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A RUN of the keyed graph with s = {a, b}: compile_us. */
static int64_t s_keyed_run(const char *endpoint, const gx_graph *g, int64_t a, int64_t b)
{
    gx_client *c = s_connect(endpoint);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (const int64_t[]){2, 3});
    gx_tensor *s = gx_tensor_new(GX_I64, 1, (const int64_t[]){2});
    for (int i = 0; i < 6; i++)
        ((float *)gx_tensor_data(x))[i] = (float)i - 2.5f;
    ((int64_t *)gx_tensor_data(s))[0] = a;
    ((int64_t *)gx_tensor_data(s))[1] = b;
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "x", x), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "s", s), GX_OK);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert(gx_tensor_shape(y)[0] == a && gx_tensor_shape(y)[1] == b);
    ck_assert_float_eq(((const float *)gx_tensor_cdata(y))[5], 2.5f);
    int64_t us = gx_result_info(r)->compile_us;
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&s);
    gx_client_destroy(&c);
    return us;
}

/* Keyed inputs' values are part of the artifact's key: plans for two
 * values of s are two files, and a restarted daemon serves both without
 * compiling or refusing either. */
START_TEST(keyed_values_have_their_own_files)
{
    char *dir = gxt_tmpdir(), profiles[4200], out[4096];
    snprintf(profiles, sizeof profiles, "%s/profiles", dir);
    const char *args[] = {"--profile-dir", profiles, NULL};
    gx_graph *g = s_keyed();
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    ck_assert_int_gt(s_keyed_run(d.endpoint, g, 3, 2), 0);
    ck_assert_int_gt(s_keyed_run(d.endpoint, g, 6, 1), 0);
    ck_assert_int_eq(s_keyed_run(d.endpoint, g, 3, 2), 0); /* the plan cache */
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls %s/artifacts | grep -c '\\.gxa$'", dir), 0);
    ck_assert_str_eq(out, "2\n");
    gxt_daemon_start(&d, args);
    ck_assert_int_eq(s_keyed_run(d.endpoint, g, 6, 1), 0);
    ck_assert_int_eq(s_keyed_run(d.endpoint, g, 3, 2), 0);
    char *st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, "\"hits\":2") && strstr(st, "\"rejected\":0") &&
                      strstr(st, "\"plans_compiled\":0"),
                  "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- shared constants files, the writer ------------------------------------------ */

/* x [B, 64] (B symbolic) -> MatMul 64x256 + Relu -> MatMul 256x32: every
 * batch size a signature of its own, the packed weights the same. */
static gx_graph *s_wide(void)
{
    gx_graph *g = gx_graph_new("wide");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){-1, 64}), GX_OK);
    s_rconst(g, "w1", 2, (const int64_t[]){64, 512}, 0.2f);
    s_rconst(g, "w2", 2, (const int64_t[]){512, 32}, 0.2f);
    s_node(g, "MatMul", IN("x", "w1"), "m1");
    s_node(g, "Relu", IN("m1"), "r1");
    s_node(g, "MatMul", IN("r1", "w2"), "y");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* An input of s_wide with rows rows (data: malloc'ed, the caller frees). */
static void s_wide_in(int64_t rows, gx_view *in, void **data)
{
    *in = (gx_view){.dtype = GX_F32, .ndim = 2, .shape = {rows, 64}, .numel = rows * 64};
    *data = gx_aligned_alloc((size_t)in->numel * sizeof(float));
    for (int64_t k = 0; k < in->numel; k++)
        ((float *)*data)[k] = s_randf();
    in->data = *data;
}

/* A loader of constants files from an artifact cache, counting its calls. */
typedef struct s_cl {
    gxd_artifacts *a;
    const char *gid;
    void *buf;
    int calls;
} s_cl;

static int s_cl_load(void *arg, const char *name, const void **buf, size_t *len)
{
    s_cl *c = arg;
    c->calls++;
    free(c->buf);
    int rc = gxd_artifacts_load_consts(c->a, c->gid, name, &c->buf, len);
    *buf = c->buf;
    return rc;
}

/* The output bytes of p on in (sequential). */
static s_out s_run1(gxt_team *e, gxd_plan *p, const gx_view *in)
{
    s_out o = {0};
    s_run(e, &p, &in, 1, &s_cfgs[0], &o);
    return o;
}

#define S_NSIG 4

/* Plans of S_NSIG batch sizes of one graph: one constants file on disk
 * (written once, then found), a plan file each of a few KB; read back in
 * a new daemon's table, the file is read once and every plan reads the
 * one copy of each packed weight; the outputs are the compiled plans'. */
START_TEST(signatures_share_one_constants_file)
{
    char *dir = gxt_tmpdir(), err[512], key[128], cname[S_NSIG][GX_ARTIFACT_CONSTS + 1];
    gx_graph *g = s_wide();
    gx_graph_id id;
    s_id(g, &id);
    gxt_team e;
    gxt_team_start(&e);
    gxd_shared *t1 = gxd_shared_new();
    gxd_compile_limits lim = s_lim;
    lim.shared = t1;
    gxd_artifacts *a = gxd_artifacts_new(dir, 1024, 1ll << 30, NULL);
    gx_view in[S_NSIG];
    void *data[S_NSIG];
    gxd_plan *p[S_NSIG];
    s_out want[S_NSIG];
    size_t whole = 0, plan_bytes = 0, clen0 = 0;
    for (int i = 0; i < S_NSIG; i++) {
        s_wide_in(i + 1, &in[i], &data[i]);
        p[i] = s_plan_of(g, &in[i], &lim);
        ck_assert_uint_ge(p[i]->n_prepared, 2);
        want[i] = s_run1(&e, p[i], &in[i]);
        void *buf, *cbuf, *one;
        size_t len, clen, onelen;
        ck_assert_int_eq(gxd_artifact_write(p[i], g, id.hex, &one, &onelen, err, sizeof err), GX_OK);
        ck_assert_int_eq(gxd_artifact_write_split(p[i], g, id.hex, &buf, &len, &cbuf, &clen,
                                                  cname[i], err, sizeof err),
                         GX_OK);
        ck_assert_ptr_nonnull(cbuf);
        ck_assert_str_eq(cname[i], cname[0]); /* the same weights: the same file */
        ck_assert_uint_lt(len, 16384);
        ck_assert_uint_gt(clen, 64 * 256 * 4);
        ck_assert_uint_gt(onelen, clen); /* the one-file form holds them all */
        whole += onelen;
        plan_bytes += len;
        clen0 = clen;
        gxd_artifact_key(id.hex, &in[i], NULL, 1, &s_lim, key, sizeof key);
        ck_assert_int_eq(gxd_artifacts_save_split(a, key, buf, len, cname[i], cbuf, clen), GX_OK);
        free(buf), free(cbuf), free(one);
    }
    gxd_artifacts_stats st;
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(st.writes, S_NSIG);
    ck_assert_int_eq(st.consts_writes, 1);
    ck_assert_int_eq(st.consts_reused, S_NSIG - 1);
    ck_assert_int_eq(st.files, S_NSIG + 1);
    ck_assert_int_eq(st.consts_files, 1);
    ck_assert_int_eq(st.bytes, (int64_t)(plan_bytes + clen0));
    ck_assert_int_lt(st.bytes * 3, (int64_t)whole); /* 4 signatures: under a third */
    /* read back as a restarted daemon would: its own table */
    gxd_shared *t2 = gxd_shared_new();
    lim.shared = t2;
    s_cl cl = {a, id.hex, NULL, 0};
    const gxd_artifact_consts cs = {s_cl_load, &cl};
    gxd_plan *q[S_NSIG];
    for (int i = 0; i < S_NSIG; i++) {
        gxd_artifact_key(id.hex, &in[i], NULL, 1, &s_lim, key, sizeof key);
        void *buf;
        size_t len;
        ck_assert_int_eq(gxd_artifacts_load(a, key, &buf, &len), GX_OK);
        ck_assert_msg(gxd_artifact_read_ex(buf, len, g, id.hex, &lim, NULL, &cs, &q[i], err,
                                           sizeof err) == GX_OK,
                      "%s", err);
        free(buf);
        ck_assert_int_eq(cl.calls, 1); /* the first read alone reads the constants file */
        s_out got = s_run1(&e, q[i], &in[i]);
        ck_assert_uint_eq(got.n, want[i].n);
        ck_assert(memcmp(got.bytes, want[i].bytes, got.n) == 0);
        free(got.bytes);
        /* one copy per packed weight, for every plan */
        ck_assert_uint_eq(q[i]->n_prepared, q[0]->n_prepared);
        for (size_t k = 0; k < q[i]->n_prepared; k++) {
            ck_assert(q[i]->prepared[k].shared);
            ck_assert_ptr_eq(q[i]->values[q[i]->prepared[k].value].view.data,
                             q[0]->values[q[0]->prepared[k].value].view.data);
        }
    }
    ck_assert_int_le(gxd_shared_bytes(t2), (int64_t)clen0);
    /* a plan compiled now (a new batch size) shares the copies read */
    gx_view in5 = in[0];
    in5.shape[0] = 5;
    in5.numel = 5 * 64;
    in5.data = NULL; /* compiled, not run */
    gxd_plan *c5 = s_plan_of(g, &in5, &lim);
    for (size_t k = 0; k < c5->n_prepared; k++)
        ck_assert_ptr_eq(c5->values[c5->prepared[k].value].view.data,
                         q[0]->values[q[0]->prepared[k].value].view.data);
    gxd_plan_destroy(&c5);
    for (int i = 0; i < S_NSIG; i++) {
        gxd_plan_destroy(&q[i]);
        gxd_plan_destroy(&p[i]);
        free(want[i].bytes);
        free(data[i]);
    }
    free(cl.buf);
    gxd_shared_destroy(&t1);
    gxd_shared_destroy(&t2);
    gxd_artifacts_destroy(&a);
    gxt_team_stop(&e);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A plan file and its constants file in memory. */
typedef struct s_split {
    gx_graph *g;
    gx_graph_id id;
    unsigned char *buf, *cbuf;
    size_t len, clen;
    char cname[GX_ARTIFACT_CONSTS + 1];
} s_split;

static void s_split_make(s_split *f)
{
    char err[512];
    f->g = s_wide();
    s_id(f->g, &f->id);
    gx_view in;
    void *data;
    s_wide_in(3, &in, &data);
    gxd_plan *p = s_plan_of(f->g, &in, &s_lim);
    ck_assert_int_eq(gxd_artifact_write_split(p, f->g, f->id.hex, (void **)&f->buf, &f->len,
                                              (void **)&f->cbuf, &f->clen, f->cname, err,
                                              sizeof err),
                     GX_OK);
    gxd_plan_destroy(&p);
    free(data);
}

/* What load gives: the constants file's bytes as arg says. */
typedef struct s_given {
    const void *buf;
    size_t len;
} s_given;

static int s_given_load(void *arg, const char *name, const void **buf, size_t *len)
{
    (void)name;
    const s_given *gv = arg;
    if (!gv->buf)
        return GX_ENOTFOUND;
    *buf = gv->buf;
    *len = gv->len;
    return GX_OK;
}

static int s_read_with(const s_split *f, const void *cbuf, size_t clen, char *err, size_t errlen)
{
    s_given gv = {cbuf, clen};
    const gxd_artifact_consts cs = {s_given_load, &gv};
    gxd_plan *p = NULL;
    int rc = gxd_artifact_read_ex(f->buf, f->len, f->g, f->id.hex, &s_lim, NULL, &cs, &p, err,
                                  errlen);
    ck_assert(rc == GX_OK ? p != NULL : p == NULL);
    gxd_plan_destroy(&p);
    return rc;
}

/* Torn, flipped, old, foreign and swapped constants files are refused,
 * and so is a plan file of format version 1 or one whose constants file
 * cannot be had; a plan file read without a loader says so. */
START_TEST(bad_constants_files_are_refused)
{
    s_split f;
    s_split_make(&f);
    char err[512];
    ck_assert_msg(s_read_with(&f, f.cbuf, f.clen, err, sizeof err) == GX_OK, "%s", err);
    unsigned char *b = malloc(f.clen);
    /* torn: cut anywhere */
    const size_t cuts[] = {0, 8, GX_ARTIFACT_HEADER, f.clen / 2, f.clen - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        ck_assert_int_eq(s_read_with(&f, f.cbuf, cuts[i], err, sizeof err), GX_EFORMAT);
        ck_assert_msg(strstr(err, "constants file"), "%s", err);
    }
    /* a flipped bit: the checksum */
    for (size_t at = GX_ARTIFACT_HEADER; at < f.clen; at += f.clen / 13 + 1) {
        memcpy(b, f.cbuf, f.clen);
        b[at] ^= 4;
        ck_assert_int_eq(s_read_with(&f, b, f.clen, err, sizeof err), GX_EFORMAT);
        ck_assert_msg(strstr(err, "checksum"), "%s", err);
    }
    /* flipped and resealed: its name is its contents' hash, no more */
    memcpy(b, f.cbuf, f.clen);
    b[GX_ARTIFACT_HEADER + 100] ^= 4;
    gx_artifact_put_le(b + 24, gx_artifact_checksum(b + GX_ARTIFACT_HEADER,
                                                    f.clen - GX_ARTIFACT_HEADER), 8);
    ck_assert_int_eq(s_read_with(&f, b, f.clen, err, sizeof err), GX_ENOTFOUND);
    ck_assert_msg(strstr(err, "contents"), "%s", err);
    /* another version, another build */
    memcpy(b, f.cbuf, f.clen);
    gx_artifact_put_le(b + 8, 1, 4);
    ck_assert_int_eq(s_read_with(&f, b, f.clen, err, sizeof err), GX_EVERSION);
    memcpy(b, f.cbuf, f.clen);
    b[32 + 7] ^= 1;
    ck_assert_int_eq(s_read_with(&f, b, f.clen, err, sizeof err), GX_EVERSION);
    /* a plan's file where a constants file was asked for */
    ck_assert_int_eq(s_read_with(&f, f.buf, f.len, err, sizeof err), GX_EFORMAT);
    ck_assert_msg(strstr(err, "no magic"), "%s", err);
    /* another graph's constants file (another name) */
    s_file o;
    s_file_make(&o);
    gx_view oin[1];
    void *od[1];
    s_inputs(o.g, oin, od);
    gxd_plan *op = s_plan_of(o.g, oin, &s_lim);
    void *obuf, *ocbuf;
    size_t olen, oclen;
    char ocname[GX_ARTIFACT_CONSTS + 1];
    ck_assert_int_eq(gxd_artifact_write_split(op, o.g, o.id.hex, &obuf, &olen, &ocbuf, &oclen,
                                              ocname, err, sizeof err),
                     GX_OK);
    ck_assert_ptr_nonnull(ocbuf);
    ck_assert_int_eq(s_read_with(&f, ocbuf, oclen, err, sizeof err), GX_ENOTFOUND);
    ck_assert_msg(strstr(err, "holds"), "%s", err);
    /* none to be had; no loader at all */
    ck_assert_int_eq(s_read_with(&f, NULL, 0, err, sizeof err), GX_ENOTFOUND);
    ck_assert_msg(strstr(err, "cannot be read"), "%s", err);
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_artifact_read(f.buf, f.len, f.g, f.id.hex, &s_lim, &p, err, sizeof err),
                     GX_ENOTFOUND);
    ck_assert_ptr_null(p);
    /* a plan file of format version 1 (resealed): refused as old, so the
     * daemon removes it and compiles */
    unsigned char *pb = malloc(f.len);
    memcpy(pb, f.buf, f.len);
    gx_artifact_put_le(pb + 8, 1, 4);
    ck_assert_int_eq(gxd_artifact_read(pb, f.len, f.g, f.id.hex, &s_lim, &p, err, sizeof err),
                     GX_EVERSION);
    ck_assert_msg(strstr(err, "format version 1"), "%s", err);
    /* the plan file naming another constants file than its body does */
    memcpy(pb, f.buf, f.len);
    pb[64] = pb[64] == 'a' ? 'b' : 'a';
    s_given gv = {f.cbuf, f.clen};
    const gxd_artifact_consts cs = {s_given_load, &gv};
    ck_assert_int_eq(gxd_artifact_read_ex(pb, f.len, f.g, f.id.hex, &s_lim, NULL, &cs, &p, err,
                                          sizeof err),
                     GX_EFORMAT);
    ck_assert_msg(strstr(err, "the header names"), "%s", err);
    /* resealed corruption of the plan file around its references: refused
     * or read within the checks (the sanitizer build checks "never more") */
    unsigned x = 11;
    for (size_t at = GX_ARTIFACT_HEADER; at < f.len; at += 1 + (x = x * 1103515245u + 12345u) % 7) {
        memcpy(pb, f.buf, f.len);
        pb[at] ^= (unsigned char)(1u << (x >> 16) % 8);
        s_reseal(pb, f.len);
        (void)gxd_artifact_read_ex(pb, f.len, f.g, f.id.hex, &s_lim, NULL, &cs, &p, err,
                                   sizeof err);
        gxd_plan_destroy(&p);
    }
    free(pb);
    free(obuf), free(ocbuf), free(od[0]);
    gxd_plan_destroy(&op);
    s_file_free(&o);
    free(b);
    free(f.buf), free(f.cbuf);
    gx_graph_destroy(&f.g);
}
END_TEST

static char s_shout[1024]; /* what a shell command printed */

/* The file names of dir ending in ext, counted. */
static int s_count_files(const char *dir, const char *ext)
{
    char out[64];
    ck_assert_int_eq(gxt_sh(out, sizeof out, "ls -a %s | grep -c -- '%s$' || true", dir, ext), 0);
    return atoi(out);
}

/* Eviction counts constants files and removes one with the last plan
 * file naming it, never before; one no plan names goes at once. */
START_TEST(eviction_keeps_shared_constants_while_named)
{
    char *dir = gxt_tmpdir(), key[128], path[4200];
    s_split f;
    s_split_make(&f);
    const int64_t max = (int64_t)(f.clen + 3 * f.len + f.len / 2); /* consts + 3 plans */
    gxd_artifacts *a = gxd_artifacts_new(dir, 1024, max, NULL);
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s-%016x", f.id.hex, i);
        ck_assert_int_eq(gxd_artifacts_save_split(a, key, f.buf, f.len, f.cname, f.cbuf, f.clen),
                         GX_OK);
        /* distinct times for the least recently used order */
        snprintf(path, sizeof path, "touch -d '@%d' %s/%s.gxa", 1000000 + i, dir, key);
        ck_assert_int_eq(gxt_sh(s_shout, sizeof s_shout, "%s", path), 0);
    }
    gxd_artifacts_stats st;
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_le(st.bytes, max);
    ck_assert_int_eq(st.consts_files, 1);
    ck_assert_int_eq(st.consts_bytes, (int64_t)f.clen);
    ck_assert_int_eq(st.files, 4); /* 3 plans + their constants */
    ck_assert_int_eq(s_count_files(dir, ".gxc"), 1);
    ck_assert_int_eq(s_count_files(dir, ".gxa"), 3);
    /* the oldest went: 0 and 1 */
    snprintf(path, sizeof path, "%s/%s-%016x.gxa", dir, f.id.hex, 0);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/%s-%016x.gxa", dir, f.id.hex, 4);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* the bounds shrink to one plan's bytes: every plan goes, and with the
     * last the constants file */
    gxd_artifacts_destroy(&a);
    a = gxd_artifacts_new(dir, 1024, (int64_t)f.len, NULL);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 9);
    ck_assert_int_eq(gxd_artifacts_save(a, key, f.buf, f.len), GX_OK); /* names the same file */
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(st.consts_files, 0);
    ck_assert_int_eq(s_count_files(dir, ".gxc"), 0);
    ck_assert_int_le(st.bytes, (int64_t)f.len);
    /* a plan file with its constants file within bounds stays; an orphan
     * constants file (a crash between the two writes) goes at the next save */
    gxd_artifacts_destroy(&a);
    a = gxd_artifacts_new(dir, 1024, 1ll << 30, NULL);
    ck_assert_int_eq(gxt_sh(s_shout, sizeof s_shout, "echo x > %s/%s-%s.gxc && echo y > %s/%s-0123456789abcdef.gxc",
                            dir, f.id.hex, f.cname, dir, f.id.hex),
                     0);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 10);
    ck_assert_int_eq(gxd_artifacts_save_split(a, key, f.buf, f.len, f.cname, f.cbuf, f.clen),
                     GX_OK);
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(s_count_files(dir, ".gxc"), 1); /* the orphan went, the named one stays */
    ck_assert_int_eq(st.consts_files, 1);
    ck_assert_int_eq(st.consts_writes, 1); /* "x" was not its size: written again */
    void *cb;
    size_t cl;
    ck_assert_int_eq(gxd_artifacts_load_consts(a, f.id.hex, f.cname, &cb, &cl), GX_OK);
    ck_assert(cl == f.clen && memcmp(cb, f.cbuf, cl) == 0);
    free(cb);
    /* one a disk corrupted (its size kept) is written again, not named */
    ck_assert_int_eq(gxt_sh(s_shout, sizeof s_shout,
                            "printf 'XY' | dd of=%s/%s-%s.gxc bs=1 seek=300 conv=notrunc "
                            "2>/dev/null",
                            dir, f.id.hex, f.cname),
                     0);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 11);
    ck_assert_int_eq(gxd_artifacts_save_split(a, key, f.buf, f.len, f.cname, f.cbuf, f.clen),
                     GX_OK);
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(st.consts_writes, 2);
    ck_assert_int_eq(gxd_artifacts_load_consts(a, f.id.hex, f.cname, &cb, &cl), GX_OK);
    ck_assert(cl == f.clen && memcmp(cb, f.cbuf, cl) == 0);
    free(cb);
    gxd_artifacts_destroy(&a);
    free(f.buf), free(f.cbuf);
    gx_graph_destroy(&f.g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Hostile entries in the directory (a FIFO, a directory, links, garbage,
 * a header naming a path): loads refuse them without blocking, eviction
 * leaves them alone, names outside hex digits are never opened. */
START_TEST(hostile_directory_entries)
{
    char *dir = gxt_tmpdir(), key[128];
    s_split f;
    s_split_make(&f);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 1);
    ck_assert_int_eq(gxt_sh(s_shout, sizeof s_shout,
                            "cd %s && mkfifo %s.gxa && mkdir %s-%s.gxc && "
                            "ln -s /dev/zero %s-0000000000000000.gxc && "
                            "ln -s /etc/passwd %s-%016x.gxa && "
                            "head -c 5000 /dev/urandom > %s-%016x.gxa && echo z > .x.gxa",
                            dir, key, f.id.hex, f.cname, f.id.hex, f.id.hex, 2, f.id.hex, 3),
                     0);
    gxd_artifacts *a = gxd_artifacts_new(dir, 1024, 1ll << 30, NULL);
    void *b = NULL;
    size_t n = 0;
    ck_assert_int_eq(gxd_artifacts_load(a, key, &b, &n), GX_EIO); /* the FIFO: no wait */
    ck_assert_int_eq(gxd_artifacts_load_consts(a, f.id.hex, f.cname, &b, &n), GX_EIO);
    ck_assert_int_eq(gxd_artifacts_load_consts(a, f.id.hex, "0000000000000000", &b, &n), GX_EIO);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 2);
    ck_assert_int_eq(gxd_artifacts_load(a, key, &b, &n), GX_EIO); /* a link */
    ck_assert_int_eq(gxd_artifacts_load_consts(a, f.id.hex, "../../etc/passwd", &b, &n),
                     GX_ENOTFOUND);
    ck_assert_int_eq(gxd_artifacts_load(a, "../../etc/passwd", &b, &n), GX_ENOTFOUND);
    /* a plan file whose header names a path as its constants file */
    unsigned char *pb = malloc(f.len);
    memcpy(pb, f.buf, f.len);
    memcpy(pb + 64, "../../../../../../../etc/passwd", 31);
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 4);
    ck_assert_int_eq(gxd_artifacts_save(a, key, pb, f.len), GX_OK); /* evicts: survives it */
    snprintf(key, sizeof key, "%s-%016x", f.id.hex, 5); /* a good pair beside them */
    ck_assert_int_eq(gxd_artifacts_save_split(a, key, f.buf, f.len, f.cname, f.cbuf, f.clen),
                     GX_EIO); /* its constants file's name is a directory */
    gxd_artifacts_stats st;
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(st.files, 2); /* the garbage and the path-naming plan: regular files */
    ck_assert_int_eq(gxt_sh(s_shout, sizeof s_shout, "test -p %s/%s-%016x.gxa && test -d %s/%s-%s.gxc && "
                                     "test -L %s/%s-0000000000000000.gxc && test -e /etc/passwd",
                            dir, f.id.hex, 1, dir, f.id.hex, f.cname, dir, f.id.hex),
                     0);
    gxd_artifacts_destroy(&a);
    free(pb);
    free(f.buf), free(f.cbuf);
    gx_graph_destroy(&f.g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* The writer: a post returns at once while a write runs; writes run in
 * order; flush waits for them; a full queue drops (and counts) a write;
 * stop without flush drops what is queued; each drop is called once. */
typedef struct s_wjob {
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    bool *open; /* the gate the first write waits at */
    int *started, *done, *dropped, rc;
} s_wjob;

static int s_wjob_write(void *arg, gxd_artifacts *a)
{
    (void)a;
    s_wjob *j = arg;
    pthread_mutex_lock(j->mu);
    (*j->started)++;
    pthread_cond_broadcast(j->cv);
    while (!*j->open)
        pthread_cond_wait(j->cv, j->mu);
    (*j->done)++;
    pthread_mutex_unlock(j->mu);
    return j->rc;
}

static void s_wjob_drop(void *arg)
{
    s_wjob *j = arg;
    pthread_mutex_lock(j->mu);
    (*j->dropped)++;
    pthread_mutex_unlock(j->mu);
}

/* Waits until n writes have started. */
static void s_wjob_started(const s_wjob *j, int n)
{
    pthread_mutex_lock(j->mu);
    while (*j->started < n)
        pthread_cond_wait(j->cv, j->mu);
    pthread_mutex_unlock(j->mu);
}

START_TEST(writer_queue_flush_and_stop)
{
    char *dir = gxt_tmpdir();
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    bool open = false;
    int started = 0, done = 0, dropped = 0;
    enum { N = 70 };
    static s_wjob j[N];
    for (int i = 0; i < N; i++)
        j[i] = (s_wjob){&mu, &cv, &open, &started, &done, &dropped, i == 1 ? GX_EIO : GX_OK};
    gxd_artifacts *a = gxd_artifacts_new(dir, 1024, 1ll << 30, NULL);
    /* the writer blocks on the first; 64 wait; the rest find it full */
    int full = 0;
    for (int i = 0; i < N; i++) {
        const int rc = gxd_artifacts_post(a, s_wjob_write, s_wjob_drop, &j[i]);
        ck_assert(rc == GX_OK || rc == GX_ELIMIT);
        full += rc == GX_ELIMIT;
        if (i == 0) /* the writer took it: the queue is empty again */
            s_wjob_started(&j[0], 1);
    }
    gxd_artifacts_stats st;
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(full, N - 65);
    ck_assert_int_eq(st.dropped, full);
    ck_assert_int_eq(st.queued, 65); /* 64 waiting, one under way */
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(dropped, full); /* a refused post gives its hold back at once */
    open = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    gxd_artifacts_flush(a);
    gxd_artifacts_get_stats(a, &st);
    ck_assert_int_eq(done, 65);
    ck_assert_int_eq(dropped, N);
    ck_assert_int_eq(st.write_errors, 1);
    ck_assert_int_eq(st.queued, 0);
    /* stop without flush: queued writes are dropped, later posts too */
    pthread_mutex_lock(&mu);
    open = false;
    pthread_mutex_unlock(&mu);
    ck_assert_int_eq(gxd_artifacts_post(a, s_wjob_write, s_wjob_drop, &j[0]), GX_OK);
    s_wjob_started(&j[0], 66);
    for (int i = 1; i < 5; i++)
        ck_assert_int_eq(gxd_artifacts_post(a, s_wjob_write, s_wjob_drop, &j[i]), GX_OK);
    pthread_mutex_lock(&mu);
    open = true; /* let the one running finish; the stop drops the four */
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    gxd_artifacts_stop(a, false);
    ck_assert_int_eq(gxd_artifacts_post(a, s_wjob_write, s_wjob_drop, &j[5]), GX_EBUSY);
    ck_assert_int_ge(done, 66);
    ck_assert_int_eq(dropped, N + 6);
    gxd_artifacts_destroy(&a);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* STATS' artifacts counter name reaching want (the writer writes after
 * the jobs: no sleep, a poll of what it says it did). */
static void s_wait_stat(const char *endpoint, const char *name, int want)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":%d,", name, want);
    for (int i = 0;; i++) {
        char *st = s_stats(endpoint);
        const bool ok = strstr(st, pat) && strstr(st, "\"queued\":0,");
        ck_assert_msg(ok || i < 100000, "%s: %s", pat, st);
        free(st);
        if (ok)
            return;
    }
}

/* One RUN of s_wide with B rows on the daemon at endpoint: its output
 * bytes (malloc'ed, *n), the compile time. */
static char *s_wide_run(const char *endpoint, const gx_graph *g, int64_t rows, size_t *n,
                        int64_t *compile_us)
{
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (const int64_t[]){rows, 64});
    for (int64_t i = 0; i < gx_tensor_numel(x); i++)
        ((float *)gx_tensor_data(x))[i] = (float)((i * 37) % 19) / 19.0f - 0.4f;
    char *ex = NULL;
    char *y = s_daemon_run(endpoint, g, x, GX_MODE_INTER, n, compile_us, &ex);
    free(ex);
    gx_tensor_destroy(&x);
    return y;
}

/* Through gexecd: S_NSIG signatures of one graph write S_NSIG plan files
 * and one constants file (after the replies: the test waits for STATS'
 * count); a restart serves every signature from them, the same bytes,
 * compiling nothing. The registry only looks up (tune.mode: cache): a
 * winner explored between the two daemons would make the plans' files
 * stale, and they would rightly be compiled again. */
static const char s_no_explore[] = "tune:\n  mode: cache\n";
START_TEST(restarted_daemon_serves_signatures_from_shared_constants)
{
    char *dir = gxt_tmpdir(), profiles[4200];
    snprintf(profiles, sizeof profiles, "%s/profiles", dir);
    const char *args[] = {"--profile-dir", profiles, NULL};
    gx_graph *g = s_wide();
    char *y[S_NSIG];
    size_t n[S_NSIG];
    int64_t us;
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, s_no_explore, args);
    for (int i = 0; i < S_NSIG; i++)
        y[i] = s_wide_run(d.endpoint, g, i + 1, &n[i], &us);
    s_wait_stat(d.endpoint, "writes", S_NSIG);
    char *st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, "\"consts_writes\":1,") && strstr(st, "\"consts_files\":1") &&
                      strstr(st, "\"write_errors\":0,"),
                  "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    char adir[4300];
    snprintf(adir, sizeof adir, "%s/artifacts", dir);
    ck_assert_int_eq(s_count_files(adir, ".gxa"), S_NSIG);
    ck_assert_int_eq(s_count_files(adir, ".gxc"), 1);
    gxt_daemon_start_yaml(&d, s_no_explore, args);
    for (int i = S_NSIG - 1; i >= 0; i--) {
        size_t m;
        char *z = s_wide_run(d.endpoint, g, i + 1, &m, &us);
        ck_assert_int_eq(us, 0);
        ck_assert(m == n[i] && memcmp(z, y[i], m) == 0);
        free(z);
        free(y[i]);
    }
    st = s_stats(d.endpoint);
    char want[64];
    snprintf(want, sizeof want, "\"hits\":%d,", S_NSIG);
    ck_assert_msg(strstr(st, want) && strstr(st, "\"plans_compiled\":0") &&
                      strstr(st, "\"writes\":0,"),
                  "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* A directory the daemon cannot write (its path runs through a file):
 * every job still runs, STATS counts the failed writes. */
START_TEST(write_failures_never_fail_a_job)
{
    char *dir = gxt_tmpdir(), conf[4200], out[64];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *cf = fopen(conf, "w");
    ck_assert_ptr_nonnull(cf);
    fprintf(cf, "profile:\n  dir: \"%s/profiles\"\nartifacts:\n  dir: \"%s/file/artifacts\"\n",
            dir, dir);
    fclose(cf);
    ck_assert_int_eq(gxt_sh(out, sizeof out, "echo > %s/file", dir), 0);
    const char *args[] = {"-c", conf, NULL};
    gx_graph *g = s_wide();
    gxt_daemon d;
    gxt_daemon_start(&d, args);
    for (int i = 0; i < 3; i++) {
        size_t n;
        int64_t us;
        free(s_wide_run(d.endpoint, g, i + 1, &n, &us));
        ck_assert_int_gt(us, 0);
    }
    s_wait_stat(d.endpoint, "write_errors", 3);
    char *st = s_stats(d.endpoint);
    ck_assert_msg(strstr(st, "\"writes\":0,"), "%s", st);
    free(st);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *artifact_suite(void)
{
    Suite *s = suite_create("artifact");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, round_trip_runs_the_same_bytes, 0,
                        (int)(sizeof s_cases / sizeof s_cases[0]));
    tcase_add_loop_test(tc, device_plans_round_trip, 0,
                        (int)(sizeof s_dev_cases / sizeof s_dev_cases[0]));
    tcase_add_test(tc, bad_files_are_refused);
    tcase_add_test(tc, device_files_are_checked);
    tcase_add_test(tc, artifact_plans_are_replanned_from_the_graph);
    tcase_add_test(tc, prepared_constants_of_another_form_are_refused);
    tcase_add_test(tc, resealed_corruption_never_runs_wild);
    tcase_add_test(tc, kernel_names_round_trip);
    tcase_add_test(tc, slice_plans_share_the_whole_plans_constants);
    tcase_add_test(tc, explain_artifact_prints_the_file);
    suite_add_tcase(s, tc);
    TCase *e2e = tcase_create("e2e");
    tcase_set_timeout(e2e, 120);
    tcase_add_loop_test(e2e, restarted_daemon_serves_from_artifact, 0,
                        2 * (int)(sizeof s_modes / sizeof s_modes[0]));
    tcase_add_test(e2e, compile_request_answers_the_artifact);
    tcase_add_test(e2e, restarted_daemon_replans_artifact_plans);
    tcase_add_test(e2e, keyed_values_have_their_own_files);
    tcase_add_test(e2e, restarted_daemon_serves_signatures_from_shared_constants);
    tcase_add_test(e2e, write_failures_never_fail_a_job);
    suite_add_tcase(s, e2e);
    TCase *sh = tcase_create("shared");
    tcase_set_timeout(sh, 120);
    tcase_add_test(sh, signatures_share_one_constants_file);
    tcase_add_test(sh, bad_constants_files_are_refused);
    tcase_add_test(sh, eviction_keeps_shared_constants_while_named);
    tcase_add_test(sh, hostile_directory_entries);
    tcase_add_test(sh, writer_queue_flush_and_stop);
    suite_add_tcase(s, sh);
    return s;
}

