/*
 * The layout pass (seed 001) on real graphs: plans with layouts chosen
 * give the results of plans without (CNNs of Conv, pools,
 * BatchNormalization and elementwise ops, with per-channel constants and
 * residual adds); a subgraph whose captured values arrive in each layout
 * reorders them where it must; the plan's records agree with its steps
 * (every layout-sensitive step reads and writes its layout, reorders sit
 * exactly where neighbours differ, graph outputs are plain); an If's cost
 * weighs its branches by the profile's probabilities, and
 * gxd_plan_layout_stale says when a new profile changes the choice.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/compile/compile.h"
#include "daemon/compile/layout.h"
#include "daemon/exec/exec.h"
#include "daemon/profile.h"
#include "gexec/client.h"
#include "gexec/io.h"
#include "ops/layout.h"
#include "ops/qgemm.h"
#include "tests/testutil.h"

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }

static gx_node *s_node(gx_graph *g, const char *op, size_t n_in, const char *const *in,
                       size_t n_out, const char *const *out)
{
    gx_node *n = gx_graph_add_node(g, op, NULL, n_in, in, n_out, out);
    ck_assert_ptr_nonnull(n);
    return n;
}

static uint64_t s_rng = 88172645463325252ull;

static float s_rand(void)
{
    s_rng ^= s_rng << 13, s_rng ^= s_rng >> 7, s_rng ^= s_rng << 17;
    return (float)(s_rng % 2001) / 1000.0f - 1.0f;
}

/* A constant of random floats. */
static void s_rand_const(gx_graph *g, const char *name, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = s_rand() * 0.5f;
    gxt_const(g, name, GX_F32, ndim, shape, v);
    free(v);
}

static void s_conv(gx_graph *g, const char *name, const char *x, int64_t c, int64_t m, int64_t k,
                   const char *y)
{
    char w[64], b[64];
    snprintf(w, sizeof w, "%s.w", name);
    snprintf(b, sizeof b, "%s.b", name);
    s_rand_const(g, w, 4, (int64_t[]){m, c, k, k});
    s_rand_const(g, b, 1, (int64_t[]){m});
    gx_node *n = gx_graph_add_node(g, "Conv", name, 3, (const char *[]){x, w, b}, 1,
                                   (const char *[]){y});
    ck_assert_ptr_nonnull(n);
    const int64_t pad = k / 2;
    gx_node_set_ints(n, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
}

/* A small CNN on x [n, c0, hw, hw]: conv, relu, pool, conv, BN, a
 * per-channel bias add, a residual add, global pool. */
static gx_graph *s_cnn(int64_t c0, int64_t c1)
{
    gx_graph *g = gx_graph_new("cnn");
    s_conv(g, "conv1", "x", c0, c1, 3, "c1");
    s_node(g, "Relu", NAMES("c1"), NAMES("r1"));
    gx_node *mp = s_node(g, "MaxPool", NAMES("r1"), NAMES("p1"));
    gx_node_set_ints(mp, "kernel_shape", (int64_t[]){2, 2}, 2);
    gx_node_set_ints(mp, "strides", (int64_t[]){2, 2}, 2);
    s_conv(g, "conv2", "p1", c1, c1, 3, "c2");
    s_rand_const(g, "bn.s", 1, (int64_t[]){c1});
    s_rand_const(g, "bn.b", 1, (int64_t[]){c1});
    s_rand_const(g, "bn.m", 1, (int64_t[]){c1});
    float *var = malloc((size_t)c1 * sizeof *var);
    for (int64_t i = 0; i < c1; i++)
        var[i] = 0.5f + (float)i / (float)c1;
    gxt_const(g, "bn.v", GX_F32, 1, (int64_t[]){c1}, var);
    free(var);
    s_node(g, "BatchNormalization", NAMES("c2", "bn.s", "bn.b", "bn.m", "bn.v"), NAMES("n2"));
    s_rand_const(g, "bias", 3, (int64_t[]){c1, 1, 1});
    s_node(g, "Add", NAMES("n2", "bias"), NAMES("a2"));
    s_node(g, "Add", NAMES("a2", "p1"), NAMES("res"));
    gx_node *ap = s_node(g, "AveragePool", NAMES("res"), NAMES("q"));
    gx_node_set_ints(ap, "kernel_shape", (int64_t[]){3, 3}, 2);
    gx_node_set_ints(ap, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    s_node(g, "GlobalAveragePool", NAMES("q"), NAMES("y"));
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "res");
    return g;
}

/* Output o of one run of p on inputs (heap copy, *n floats). */
static float *s_run(const gxd_plan *p, const gx_view *inputs, size_t o, size_t *n)
{
    char err[512];
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, p, arena, inputs, &s_lim, &stop, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "run: %s", err);
    const gx_view *v = gxd_frame_output(&f, o);
    ck_assert_int_eq(v->layout, GX_LAYOUT_PLAIN);
    *n = (size_t)v->numel;
    float *y = malloc(*n * sizeof *y + 1);
    memcpy(y, v->data, *n * sizeof *y);
    gxd_frame_fini(&f);
    free(arena);
    return y;
}

/* The prepare pass's record of node's weights packed for layout l, or
 * NULL; it must be what the step reads. */
static const gxd_prepared *s_prepared(const gxd_plan *p, const char *node, gx_layout l)
{
    for (size_t i = 0; i < p->n_prepared; i++) {
        const gxd_prepared *r = &p->prepared[i];
        if (r->op == GX_OP_CONV && r->layout == l && !strcmp(r->node, node)) {
            ck_assert_uint_eq(p->values[r->value].nbytes, r->bytes);
            return r;
        }
    }
    return NULL;
}

/* The plan's steps agree with the layout pass's records. */
static void s_check_plan(const gxd_plan *p)
{
    const gxd_layout_rec *r = p->layout;
    ck_assert_ptr_nonnull(r);
    for (size_t k = 0; k < p->n_outputs; k++)
        ck_assert_int_eq(p->values[p->outputs[k]].view.layout, GX_LAYOUT_PLAIN);
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->reorder) { /* between two layouts of one logical tensor */
            const gx_view *a = &p->values[s->in[0]].view, *b = &p->values[s->out[0]].view;
            ck_assert_int_ne(a->layout, b->layout);
            ck_assert_int_eq(s->layout, b->layout);
            ck_assert_int_eq(a->numel, b->numel);
            continue;
        }
        if (s->fused || s->folded)
            continue;
        /* a step's 4-D float values are in its layout (constants were
         * rewritten, BatchNormalization's 1-D parameters are plain), but
         * the x of a Conv in NCHW16c with C not a multiple of 16, or in
         * NHWC with C <= 4, which it reads in NCHW (gx_cpu_conv_layout_input) */
        for (int k = 0; k < s->n_in; k++) {
            const gxd_value *v = s->in[k] >= 0 ? &p->values[s->in[k]] : NULL;
            const int64_t c = v && v->view.ndim == 4 ? v->view.shape[1] : 0;
            const bool plain_x = s->op == GX_OP_CONV && k == 0 && v &&
                                 v->view.layout == GX_LAYOUT_PLAIN && c > 0 &&
                                 ((s->layout == GX_LAYOUT_NCHW16C && c % 16) ||
                                  (s->layout == GX_LAYOUT_NHWC && c <= 4));
            if (v && v->kind != GXD_VALUE_CONST && v->view.dtype == GX_F32 &&
                (v->view.ndim == 4 || v->view.layout != GX_LAYOUT_PLAIN) && !plain_x)
                ck_assert_msg(v->view.layout == s->layout, "step %zu (%s) reads '%s' in %s", i,
                              s->node->name, v->name, gx_layout_name(v->view.layout));
        }
        if (s->layout != GX_LAYOUT_PLAIN && s->kernel) /* control flow's outputs are plain */
            ck_assert_int_eq(p->values[s->out[0]].view.layout, s->layout);
        /* a Conv in a layout reads its weights as the prepare pass packed them */
        if (s->op == GX_OP_CONV && s->layout != GX_LAYOUT_PLAIN)
            ck_assert_ptr_nonnull(s_prepared(p, s->node->name, s->layout));
    }
    if (!r->why[0])
        ck_assert(r->total <= r->plain_total * (1 + 1e-12));
}

static void s_cnn_case(int64_t n, int64_t c0, int64_t c1, int64_t hw)
{
    gx_graph *g = s_cnn(c0, c1);
    const int64_t shape[4] = {n, c0, hw, hw};
    gx_graph_add_input(g, "x", GX_F32, 4, shape);
    const int64_t numel = n * c0 * hw * hw;
    float *x = malloc((size_t)numel * sizeof *x);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand();
    gx_view in = {.dtype = GX_F32, .ndim = 4, .numel = numel, .data = x};
    memcpy(in.shape, shape, sizeof shape);
    gxd_compile_limits off = s_lim, unfused = s_lim;
    off.no_layout = true;
    unfused.no_fuse = true;
    gxd_plan *p_on = NULL, *p_off = NULL, *p_unfused = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p_on, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &off, &p_off, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &unfused, &p_unfused, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_str_eq(p_off->layout->why, "compiler.layout is off");
    s_check_plan(p_on);
    s_check_plan(p_unfused);
    for (size_t o = 0; o < 2; o++) {
        size_t n_on, n_off, n_un;
        float *y_on = s_run(p_on, &in, o, &n_on), *y_off = s_run(p_off, &in, o, &n_off);
        float *y_un = s_run(p_unfused, &in, o, &n_un);
        ck_assert_uint_eq(n_on, n_off);
        ck_assert_msg(gxt_allclose(y_on, y_off, n_on, 1e-4f, 1e-4f), "output %zu differs", o);
        /* a Conv heading an epilogue in its layout computes the same bits */
        ck_assert_msg(memcmp(y_on, y_un, n_on * sizeof *y_on) == 0, "fused output %zu differs", o);
        free(y_on), free(y_off), free(y_un);
    }
    gxd_plan_destroy(&p_on);
    gxd_plan_destroy(&p_off);
    gxd_plan_destroy(&p_unfused);
    gx_graph_destroy(&g);
    free(x);
}

START_TEST(cnn_same_results)
{
    s_cnn_case(1, 3, 16, 16);
    s_cnn_case(2, 16, 32, 12);
    s_cnn_case(1, 8, 24, 9); /* 24 channels: no blocked layout */
    s_cnn_case(3, 32, 32, 7);
}
END_TEST

/* A quantized MobileNetV2 block (QuantizeLinear, QLinearConv 1x1 24 ->
 * 48, depthwise 3x3, 1x1 48 -> 24 with int8 per-channel weights,
 * DequantizeLinear, residual Add): the plan with layouts gives the bytes
 * of the plan without, and where the NHWC kernels run (AVX-512 VNNI) the
 * three QLinearConvs run in NHWC from W packed for it. */
static void s_qconv(gx_graph *g, const char *name, const char *x, int64_t c, int64_t m,
                    int64_t k, int64_t group, const char *y)
{
    const int64_t cg = c / group, n = m * cg * k * k;
    int8_t *w = malloc((size_t)n), *wz = calloc((size_t)m, 1);
    float *ws = malloc((size_t)m * sizeof *ws);
    int32_t *b = malloc((size_t)m * sizeof *b);
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)(s_rand() * 127.0f);
    for (int64_t j = 0; j < m; j++) {
        ws[j] = 0.002f + 0.001f * (s_rand() + 1.0f);
        b[j] = (int32_t)(s_rand() * 300.0f);
    }
    char nw[64], nws[64], nwz[64], nb[64];
    snprintf(nw, sizeof nw, "%s.w", name), snprintf(nws, sizeof nws, "%s.ws", name);
    snprintf(nwz, sizeof nwz, "%s.wz", name), snprintf(nb, sizeof nb, "%s.b", name);
    gxt_const(g, nw, GX_I8, 4, (int64_t[]){m, cg, k, k}, w);
    gxt_const(g, nws, GX_F32, 1, (int64_t[]){m}, ws);
    gxt_const(g, nwz, GX_I8, 1, (int64_t[]){m}, wz);
    gxt_const(g, nb, GX_I32, 1, (int64_t[]){m}, b);
    gx_node *q = gx_graph_add_node(g, "QLinearConv", name, 9,
                                   (const char *[]){x, "qs", "qz", nw, nws, nwz, "qs", "qz", nb},
                                   1, (const char *[]){y});
    ck_assert_ptr_nonnull(q);
    gx_node_set_ints(q, "pads", (int64_t[]){k / 2, k / 2, k / 2, k / 2}, 4);
    gx_node_set_int(q, "group", group);
    free(w), free(wz), free(ws), free(b);
}

START_TEST(qconv_block_in_nhwc)
{
    gx_graph *g = gx_graph_new("qblock");
    const float qs = 6.0f / 255.0f;
    const uint8_t qz = 128;
    gxt_const(g, "qs", GX_F32, 0, NULL, &qs);
    gxt_const(g, "qz", GX_U8, 0, NULL, &qz);
    s_node(g, "QuantizeLinear", NAMES("x", "qs", "qz"), NAMES("xq"));
    s_qconv(g, "expand", "xq", 24, 48, 1, 1, "e");
    s_qconv(g, "dw", "e", 48, 48, 3, 48, "d");
    s_qconv(g, "project", "d", 48, 24, 1, 1, "pq");
    s_node(g, "DequantizeLinear", NAMES("pq", "qs", "qz"), NAMES("p"));
    s_node(g, "Add", NAMES("p", "x"), NAMES("y"));
    gx_graph_add_output(g, "y");
    const int64_t shape[4] = {1, 24, 28, 28}, numel = 24 * 28 * 28;
    gx_graph_add_input(g, "x", GX_F32, 4, shape);
    float *x = malloc((size_t)numel * sizeof *x);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand() * 2.0f;
    gx_view in = {.dtype = GX_F32, .ndim = 4, .numel = numel, .data = x};
    memcpy(in.shape, shape, sizeof shape);
    gxd_compile_limits off = s_lim;
    off.no_layout = true;
    gxd_plan *p_on = NULL, *p_off = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p_on, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &off, &p_off, err, sizeof err) == GX_OK, "%s", err);
    s_check_plan(p_on);
    size_t n_on, n_off;
    float *y_on = s_run(p_on, &in, 0, &n_on), *y_off = s_run(p_off, &in, 0, &n_off);
    ck_assert_uint_eq(n_on, n_off);
    ck_assert_msg(memcmp(y_on, y_off, n_on * sizeof *y_on) == 0, "the block's output differs");
    const bool vnni = !strcmp(gx_cpu_qgemm_impl(), "qgemm.avx512vnni");
    int in_nhwc = 0;
    for (size_t i = 0; i < p_on->n_steps; i++) {
        const gxd_step *s = &p_on->steps[i];
        if (s->op != GX_OP_QLINEAR_CONV || s->layout != GX_LAYOUT_NHWC)
            continue;
        in_nhwc++;
        bool packed = false;
        for (size_t j = 0; j < p_on->n_prepared; j++) {
            const gxd_prepared *r = &p_on->prepared[j];
            packed |= r->op == GX_OP_QLINEAR_CONV && r->layout == GX_LAYOUT_NHWC &&
                      !strcmp(r->node, s->node->name) && s->in[3] == r->value;
        }
        ck_assert_msg(packed, "%s reads W packed for NHWC", s->node->name);
    }
    if (vnni)
        ck_assert_int_eq(in_nhwc, 3);
    else
        fprintf(stderr, "qconv_block_in_nhwc: no AVX-512 VNNI, NCHW kernels only\n");
    free(y_on), free(y_off);
    gxd_plan_destroy(&p_on);
    gxd_plan_destroy(&p_off);
    gx_graph_destroy(&g);
    free(x);
}
END_TEST

/* Two plans of one CNN (batch 1 and 2) share the packed weights of a
 * Conv whose weights are a graph constant (conv1; conv2's are folded with
 * its BatchNormalization, each plan's own), through the graph's table. */
START_TEST(conv_weights_shared)
{
    gx_graph *g = s_cnn(16, 32);
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){-1, 16, 12, 12});
    float *x = malloc(2 * 16 * 12 * 12 * sizeof *x);
    for (int64_t i = 0; i < 2 * 16 * 12 * 12; i++)
        x[i] = s_rand();
    gxd_compile_limits lim = s_lim;
    lim.shared = gxd_shared_new();
    gxd_plan *p[2] = {NULL, NULL};
    const gxd_prepared *r[2];
    for (int n = 1; n <= 2; n++) {
        gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {n, 16, 12, 12},
                      .numel = n * 16 * 12 * 12, .data = x};
        char err[512];
        ck_assert_msg(gxd_compile(g, &in, &lim, &p[n - 1], err, sizeof err) == GX_OK, "%s", err);
        s_check_plan(p[n - 1]);
        r[n - 1] = s_prepared(p[n - 1], "conv1", GX_LAYOUT_NHWC);
        if (!r[n - 1])
            r[n - 1] = s_prepared(p[n - 1], "conv1", GX_LAYOUT_NCHW16C);
        ck_assert_msg(r[n - 1] != NULL, "conv1 stayed NCHW with batch %d", n);
        ck_assert(r[n - 1]->shared);
        ck_assert_ptr_nonnull(strstr(r[n - 1]->what, "the graph's copy"));
    }
    ck_assert_int_eq(r[0]->layout, r[1]->layout);
    ck_assert_ptr_eq(p[0]->values[r[0]->value].view.data, p[1]->values[r[1]->value].view.data);
    gxd_shared_destroy(&lim.shared);
    gxd_plan_destroy(&p[0]);
    gxd_plan_destroy(&p[1]);
    gx_graph_destroy(&g);
    free(x);
}
END_TEST

/* FPN's top-down step: Conv, Resize nearest 2x, Conv. The Resize runs in
 * NHWC between the Convs (no reorders around it) and gives the layout-off
 * plan's results. */
START_TEST(resize_in_nhwc)
{
    gx_graph *g = gx_graph_new("up");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){1, 16, 10, 12});
    s_conv(g, "c1", "x", 16, 32, 3, "a");
    gxt_const(g, "scales", GX_F32, 1, (int64_t[]){4}, (float[]){1, 1, 2, 2});
    gx_node *r = gx_graph_add_node(g, "Resize", "up", 3, (const char *[]){"a", "", "scales"}, 1,
                                   (const char *[]){"u"});
    gx_node_set_string(r, "mode", "nearest");
    s_conv(g, "c2", "u", 32, 32, 3, "y");
    gx_graph_add_output(g, "y");
    float *x = malloc(16 * 10 * 12 * sizeof *x);
    for (int64_t i = 0; i < 16 * 10 * 12; i++)
        x[i] = s_rand();
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 16, 10, 12}, .numel = 16 * 10 * 12,
                  .data = x};
    gxd_compile_limits off = s_lim;
    off.no_layout = true;
    gxd_plan *p_on = NULL, *p_off = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p_on, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &off, &p_off, err, sizeof err) == GX_OK, "%s", err);
    s_check_plan(p_on);
    bool nhwc = false;
    for (size_t i = 0; i < p_on->n_steps; i++) {
        const gxd_step *st = &p_on->steps[i];
        ck_assert_msg(!st->reorder || strcmp(st->node->name, "up") != 0, "a reorder");
        nhwc |= st->op == GX_OP_RESIZE && st->layout == GX_LAYOUT_NHWC;
    }
    ck_assert_msg(nhwc, "the Resize did not run in NHWC");
    size_t n_on, n_off;
    float *y_on = s_run(p_on, &in, 0, &n_on), *y_off = s_run(p_off, &in, 0, &n_off);
    ck_assert_uint_eq(n_on, n_off);
    ck_assert(gxt_allclose(y_on, y_off, n_on, 1e-4f, 1e-4f));
    free(y_on), free(y_off), free(x);
    gxd_plan_destroy(&p_on);
    gxd_plan_destroy(&p_off);
    gx_graph_destroy(&g);
}
END_TEST

/* A squeeze-and-excite block between Convs: the scale [N, C, 1, 1] of
 * GlobalAveragePool and Sigmoid multiplies the Conv's output in the
 * Convs' layout (it broadcasts there dim by dim), with no reorder of the
 * large tensor, and the results are the layout-off plan's. */
START_TEST(excite_in_layout)
{
    gx_graph *g = gx_graph_new("se");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){2, 32, 9, 9});
    s_conv(g, "c1", "x", 32, 32, 3, "a");
    gx_graph_add_node(g, "GlobalAveragePool", "gap", 1, (const char *[]){"a"}, 1,
                      (const char *[]){"m"});
    gx_graph_add_node(g, "Sigmoid", "sig", 1, (const char *[]){"m"}, 1, (const char *[]){"s"});
    gx_graph_add_node(g, "Mul", "scale", 2, (const char *[]){"a", "s"}, 1,
                      (const char *[]){"e"});
    s_conv(g, "c2", "e", 32, 32, 3, "y");
    gx_graph_add_output(g, "y");
    const int64_t numel = 2 * 32 * 9 * 9;
    float *x = malloc((size_t)numel * sizeof *x);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand();
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {2, 32, 9, 9}, .numel = numel, .data = x};
    gxd_compile_limits off = s_lim, unfused = s_lim;
    off.no_layout = true;
    unfused.no_fuse = true;
    gxd_plan *p_on = NULL, *p_off = NULL, *p_un = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p_on, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &off, &p_off, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in, &unfused, &p_un, err, sizeof err) == GX_OK, "%s", err);
    s_check_plan(p_on);
    s_check_plan(p_un);
    const gxd_step *mul = NULL;
    for (size_t i = 0; i < p_un->n_steps; i++)
        if (!strcmp(p_un->steps[i].node->name, "scale"))
            mul = &p_un->steps[i];
    ck_assert_ptr_nonnull(mul);
    ck_assert_msg(mul->layout != GX_LAYOUT_PLAIN, "the Mul ran in NCHW");
    for (gxd_plan **pp = (gxd_plan *[]){p_on, p_un, NULL}; *pp; pp++) {
        size_t n_on, n_off;
        float *y_on = s_run(*pp, &in, 0, &n_on), *y_off = s_run(p_off, &in, 0, &n_off);
        ck_assert_uint_eq(n_on, n_off);
        ck_assert(gxt_allclose(y_on, y_off, n_on, 1e-4f, 1e-4f));
        free(y_on), free(y_off);
    }
    free(x);
    gxd_plan_destroy(&p_on);
    gxd_plan_destroy(&p_off);
    gxd_plan_destroy(&p_un);
    gx_graph_destroy(&g);
}
END_TEST

/* A subgraph capturing x [1, 32, 6, 6] that arrives in layout l: MaxPool,
 * Relu, a per-channel Mul and Softmax over the channels (plain only). */
START_TEST(captured_in_each_layout)
{
    gx_graph *g = gx_graph_new("sub");
    gx_node *mp = s_node(g, "MaxPool", NAMES("x"), NAMES("m"));
    gx_node_set_ints(mp, "kernel_shape", (int64_t[]){3, 3}, 2);
    gx_node_set_ints(mp, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    s_node(g, "Relu", NAMES("m"), NAMES("r"));
    s_rand_const(g, "k", 4, (int64_t[]){1, 32, 1, 1});
    s_node(g, "Mul", NAMES("r", "k"), NAMES("u"));
    gx_node_set_int(s_node(g, "Softmax", NAMES("u"), NAMES("y")), "axis", 1);
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "u");
    const int64_t numel = 32 * 36;
    float *x = malloc(numel * sizeof *x), *phys = gx_aligned_alloc(numel * sizeof *phys);
    for (int64_t i = 0; i < numel; i++)
        x[i] = s_rand();
    const gx_view plain = {.dtype = GX_F32, .ndim = 4, .shape = {1, 32, 6, 6}, .numel = numel,
                           .data = x};
    const char *captured[] = {"x"};
    float *ref[2] = {NULL, NULL};
    for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
        gx_view in = gx_layout_physical((gx_layout)l, &plain);
        in.data = phys;
        gx_layout_reorder(&plain, &in, 0, 1);
        gxd_plan *p = NULL;
        char err[512];
        ck_assert_msg(gxd_compile_sub(g, captured, NULL, 1, &in, &s_lim, &p, err, sizeof err) == GX_OK,
                      "%s: %s", gx_layout_name((gx_layout)l), err);
        ck_assert(gxd_plan_matches(p, &in));
        gx_view other = gx_layout_physical((gx_layout)((l + 1) % GX_LAYOUT_COUNT), &plain);
        ck_assert(!gxd_plan_matches(p, &other)); /* the layout is part of the signature */
        s_check_plan(p);
        for (size_t o = 0; o < 2; o++) {
            size_t n;
            float *y = s_run(p, &in, o, &n);
            if (!ref[o])
                ref[o] = y;
            else
                ck_assert_msg(memcmp(ref[o], y, n * sizeof *y) == 0, "%s: output %zu differs",
                              gx_layout_name((gx_layout)l), o);
            if (ref[o] != y)
                free(y);
        }
        gxd_plan_destroy(&p);
    }
    free(ref[0]), free(ref[1]), free(x), free(phys);
    gx_graph_destroy(&g);
}
END_TEST

/* y = If(c) then MaxPool(Relu(z)) else Softmax(z, axis 1), z = Conv(x):
 * the branches prefer different layouts for z. */
static gx_graph *s_if_graph(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_node(then, "Relu", NAMES("z"), NAMES("t1"));
    gx_node *mp = s_node(then, "MaxPool", NAMES("t1"), NAMES("t"));
    gx_node_set_ints(mp, "kernel_shape", (int64_t[]){3, 3}, 2);
    gx_node_set_ints(mp, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    gx_graph_add_output(then, "t");
    gx_node_set_int(s_node(els, "Softmax", NAMES("z"), NAMES("e")), "axis", 1);
    gx_graph_add_output(els, "e");
    gx_graph *g = gx_graph_new("if");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){1, 16, 10, 10});
    gx_graph_add_input(g, "c", GX_BOOL, 0, NULL);
    s_conv(g, "conv", "x", 16, 32, 3, "z");
    gx_node *n = gx_graph_add_node(g, "If", "if", 1, (const char *[]){"c"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    return g;
}

/* A profile of 1000 jobs where the If took its then branch `then` times. */
static gxd_profile *s_if_profile(int64_t then)
{
    gxd_profile *p = gxd_profile_new("00");
    p->jobs = 1000;
    ck_assert_int_eq(gxd_profile_add(p, "conv", 1000, 0), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "if", 1000, 0), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "if/then_branch/node0", then, 0), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "if/then_branch/node1", then, 0), GX_OK);
    ck_assert_int_eq(gxd_profile_add(p, "if/else_branch/node0", 1000 - then, 0), GX_OK);
    gxd_profile_finish(p);
    return p;
}

static const gxd_layout_op *s_find_op(const gxd_plan *p, const char *node, bool free_only)
{
    for (size_t o = 0; o < p->layout->n_ops; o++)
        if (!strcmp(p->layout->ops[o].node, node) && (!free_only || p->layout->ops[o].n_sub))
            return &p->layout->ops[o];
    return NULL;
}

START_TEST(if_weighs_branches_by_probability)
{
    gx_graph *g = s_if_graph();
    /* the branch nodes' default names: node0, node1 */
    ck_assert_str_eq(g->nodes[1]->attr[0].g->nodes[0]->name, "node0");
    float x[1600];
    for (int i = 0; i < 1600; i++)
        x[i] = s_rand();
    uint8_t c = 1;
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 4, .shape = {1, 16, 10, 10}, .numel = 1600,
                      .data = x},
                     {.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &c}};
    gxd_profile *often = s_if_profile(900), *rarely = s_if_profile(100);
    gxd_plan *p[3] = {NULL, NULL, NULL};
    const gxd_profile *profs[3] = {NULL, often, rarely};
    char err[512];
    for (int k = 0; k < 3; k++) {
        gxd_compile_limits lim = s_lim;
        lim.profile = profs[k];
        ck_assert_msg(gxd_compile(g, in, &lim, &p[k], err, sizeof err) == GX_OK, "%s", err);
        s_check_plan(p[k]);
        const gxd_layout_op *op = s_find_op(p[k], "if", true);
        ck_assert_ptr_nonnull(op);
        ck_assert_int_eq(op->n_sub, 2);
        const double want = k == 0 ? 1.0 : k == 1 ? 0.9 : 0.1;
        ck_assert_double_eq_tol(op->ratio[0], want, 1e-12);
        ck_assert_double_eq_tol(op->ratio[1], k == 0 ? 1.0 : 1.0 - want, 1e-12);
        for (int l = 0; l < GX_LAYOUT_COUNT; l++)
            if (isfinite(op->cost[l]))
                ck_assert_double_eq_tol(op->cost[l],
                                        op->ratio[0] * op->sub_cost[0][l] +
                                            op->ratio[1] * op->sub_cost[1][l],
                                        1e-9);
        /* both branches give the unlaid-out results */
        gxd_compile_limits off = s_lim;
        off.no_layout = true;
        gxd_plan *q = NULL;
        ck_assert(gxd_compile(g, in, &off, &q, err, sizeof err) == GX_OK);
        for (c = 0; c < 2; c++) {
            size_t n1, n2;
            float *y1 = s_run(p[k], in, 0, &n1), *y2 = s_run(q, in, 0, &n2);
            ck_assert_uint_eq(n1, n2);
            ck_assert(gxt_allclose(y1, y2, n1, 1e-4f, 1e-4f));
            free(y1), free(y2);
        }
        gxd_plan_destroy(&q);
    }
    /* stale only when re-solving with the other profile chooses
     * differently from the plan's choice (and never against the profile
     * the plan was made with) */
    for (int a = 0; a < 3; a++)
        for (int b = 1; b < 3; b++) {
            bool differs = false;
            for (size_t o = 0; o < p[a]->layout->n_ops; o++)
                differs = differs || p[a]->layout->ops[o].chosen != p[b]->layout->ops[o].chosen;
            char why[512];
            const bool stale = gxd_plan_layout_stale(p[a], profs[b], why, sizeof why);
            ck_assert(!stale || (differs && strstr(why, " over ")));
            ck_assert(!(a == b && stale));
        }
    for (int k = 0; k < 3; k++)
        gxd_plan_destroy(&p[k]);
    gxd_profile_destroy(&often);
    gxd_profile_destroy(&rarely);
    gx_graph_destroy(&g);
}
END_TEST

/* Times measured in a layout ("<node>@<layout>" in the profile) replace
 * the estimates: a Conv measured slow in the layout the factors favour
 * moves to another, and the plan made without those times is stale. */
START_TEST(measured_times_steer_layouts)
{
    gx_graph *g = s_cnn(16, 32);
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){1, 16, 16, 16});
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 16, 16, 16}, .numel = 4096};
    gxd_plan *p0 = NULL, *p1 = NULL;
    char err[512], why[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p0, err, sizeof err) == GX_OK, "%s", err);
    const gxd_layout_op *op = s_find_op(p0, "conv2", false);
    ck_assert_ptr_nonnull(op);
    const int was = op->chosen;
    ck_assert_int_ne(was, GX_LAYOUT_PLAIN); /* the factors favour a faster layout */
    /* a profile that measured conv2 100 ms in that layout and 1 us in NCHW */
    gxd_profile *prof = gxd_profile_new("00");
    prof->jobs = 10;
    char name[64];
    snprintf(name, sizeof name, "conv2@%s", gx_layout_name((gx_layout)was));
    for (size_t k = 0; k < g->n_nodes; k++) /* every node ran in every job */
        ck_assert_int_eq(gxd_profile_add(prof, g->nodes[k]->name, 10, 0), GX_OK);
    ck_assert_int_eq(gxd_profile_add(prof, name, 10, 100000000), GX_OK);
    ck_assert_int_eq(gxd_profile_add(prof, "conv2@nchw", 10, 1000), GX_OK);
    gxd_profile_finish(prof);
    ck_assert(gxd_plan_layout_stale(p0, prof, why, sizeof why));
    ck_assert_msg(strstr(why, "'conv2'"), "%s", why);
    gxd_compile_limits lim = s_lim;
    lim.profile = prof;
    ck_assert_msg(gxd_compile(g, &in, &lim, &p1, err, sizeof err) == GX_OK, "%s", err);
    op = s_find_op(p1, "conv2", false);
    ck_assert_int_ne(op->chosen, was);
    ck_assert_double_eq_tol(op->cost[was], 100000.0, 1e-6); /* measured, in us */
    ck_assert_double_eq_tol(op->cost[GX_LAYOUT_PLAIN], 1.0, 1e-9);
    ck_assert(!gxd_plan_layout_stale(p1, prof, why, sizeof why));
    s_check_plan(p1);
    gxd_plan_destroy(&p0);
    gxd_plan_destroy(&p1);
    gxd_profile_destroy(&prof);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(explain_lists_the_choice)
{
    gx_graph *g = s_cnn(16, 32);
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){1, 16, 8, 8});
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 16, 8, 8}, .numel = 1024};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    char *j = gxd_plan_explain_json(p, g);
    ck_assert_ptr_nonnull(j);
    ck_assert_msg(strstr(j, "\"layout\":{\"total_us\":"), "%s", strstr(j, "\"layout\""));
    ck_assert(strstr(j, "\"node\":\"conv1\""));
    ck_assert(strstr(j, "\"cost_us\":{\"nchw\":"));
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].reorder)
            ck_assert(strstr(j, "\"kernel\":\"cpu.reorder\""));
    free(j);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* Start a gexecd with config `yaml` (written into dir, whose profiles/
 * keeps the daemon's profiles: no earlier run steers its choices). */
static void s_daemon_with(gxt_daemon *d, const char *dir, const char *yaml)
{
    char conf[4200];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", dir);
    FILE *f = fopen(conf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%sprofile:\n  dir: \"%s/profiles\"\n", yaml, dir);
    fclose(f);
    gxt_daemon_start(d, (const char *const[]){"-c", conf, NULL});
}

/* examples/cnn.yaml through a real gexecd: explain shows the layouts
 * chosen for its Convs and pools with their costs and the reorders; RUN
 * gives what the plan without layouts computes here; a daemon with
 * compiler.layout false keeps everything NCHW. */
START_TEST(example_cnn_end_to_end)
{
    static char out[65536];
    char graph[512], input[512], err[512];
    snprintf(graph, sizeof graph, "%s", gxt_srcpath("examples/cnn.yaml"));
    snprintf(input, sizeof input, "%s", gxt_srcpath("examples/cnn_input.npy"));
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    int rc = gxt_sh(out, sizeof out, "%s --socket %s explain %s -i x=%s 2>&1", bin, d.endpoint,
                    graph, input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    static const char *const want[] = {"layout: expected", "(all plain:", "runs/job",
                                       "nchw16c us", "conv1  Conv", "conv2  Conv",
                                       "reorder at step", "-> nchw"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(out, want[i]), "'%s' missing from:\n%s", want[i], out);

    gx_graph *g = NULL;
    gx_tensor *x = NULL;
    ck_assert_int_eq(gx_graph_load_yaml(graph, &g, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_npy_load(input, &x, err, sizeof err), GX_OK);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    gx_client_set_timeout(c, 30000);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_int_eq(gx_result_status(r), GX_OK);
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_numel(y), 10);

    gxd_compile_limits off = s_lim;
    off.no_layout = true;
    gxd_plan *p = NULL;
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 3, 32, 32}, .numel = 3072,
                  .data = gx_tensor_data(x)};
    ck_assert_msg(gxd_compile(g, &in, &off, &p, err, sizeof err) == GX_OK, "%s", err);
    size_t n;
    float *ref = s_run(p, &in, 0, &n);
    ck_assert_uint_eq(n, 10);
    ck_assert(gxt_allclose(gx_tensor_cdata(y), ref, 10, 1e-4f, 1e-5f));
    free(ref);
    gxd_plan_destroy(&p);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);

    char *dir = gxt_tmpdir();
    s_daemon_with(&d, dir, "compiler:\n  layout: false\n");
    rc = gxt_sh(out, sizeof out, "%s --socket %s explain %s -i x=%s 2>&1", bin, d.endpoint, graph,
                input);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "layout: every value plain: compiler.layout is off"), "%s", out);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
}
END_TEST

/* z = BatchNormalization(x [1, 64, 16, 16]) (a little faster in NHWC);
 * y = If(c) then MaxPool(z) (fastest in NHWC) else Softmax(z) over the
 * channels (NCHW only). Without a profile both branches count once and z
 * stays NCHW (a reorder in the then branch costs what one before the If
 * would, and x would need one too); once the then branch is all that
 * runs, z is cheaper in NHWC. */
static gx_graph *s_flip_graph(void)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    gx_node *mp = gx_graph_add_node(then, "MaxPool", "tpool", 1, (const char *[]){"z"}, 1,
                                    (const char *[]){"t"});
    gx_node_set_ints(mp, "kernel_shape", (int64_t[]){3, 3}, 2);
    gx_node_set_ints(mp, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    gx_graph_add_output(then, "t");
    gx_node *sm = gx_graph_add_node(els, "Softmax", "esoft", 1, (const char *[]){"z"}, 1,
                                    (const char *[]){"e"});
    gx_node_set_int(sm, "axis", 1);
    gx_graph_add_output(els, "e");
    gx_graph *g = gx_graph_new("flip");
    gx_graph_add_input(g, "x", GX_F32, 4, (int64_t[]){1, 64, 16, 16});
    gx_graph_add_input(g, "c", GX_BOOL, 0, NULL);
    s_rand_const(g, "pre.s", 1, (int64_t[]){64});
    s_rand_const(g, "pre.b", 1, (int64_t[]){64});
    s_rand_const(g, "pre.m", 1, (int64_t[]){64});
    float var[64];
    for (int i = 0; i < 64; i++)
        var[i] = 0.5f + (float)i / 64.0f;
    gxt_const(g, "pre.v", GX_F32, 1, (int64_t[]){64}, var);
    gx_node *bn = gx_graph_add_node(g, "BatchNormalization", "pre", 5,
                                    (const char *[]){"x", "pre.s", "pre.b", "pre.m", "pre.v"}, 1,
                                    (const char *[]){"z"});
    ck_assert_ptr_nonnull(bn);
    gx_node *n = gx_graph_add_node(g, "If", "if", 1, (const char *[]){"c"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_graph(n, "then_branch", &then);
    gx_node_set_graph(n, "else_branch", &els);
    gx_graph_add_output(g, "y");
    return g;
}

/* The layout EXPLAIN reports for node's op (NULL if it is not listed). */
static const char *s_explained_layout(gx_client *c, const gx_request *rq, const char *node,
                                      char *buf, size_t len)
{
    char *json = NULL;
    ck_assert_int_eq(gx_client_explain(c, rq, &json), GX_OK);
    char key[128];
    snprintf(key, sizeof key, "{\"node\":\"%s\",\"op\":", node);
    const char *at = strstr(json, key), *ch = at ? strstr(at, "\"chosen\":\"") : NULL;
    const char *res = NULL;
    if (ch) {
        ch += strlen("\"chosen\":\"");
        snprintf(buf, len, "%.*s", (int)strcspn(ch, "\""), ch);
        res = buf;
    }
    free(json);
    return res;
}

/* A real gexecd re-plans the graph in the background once its profile
 * changes the choice (compiler.replan), and later jobs run the new plan
 * with the same results. The daemon weighs the layouts by the counts alone
 * (compiler.layout_measured: false): the then branch running every time
 * is what flips the choice, whatever times a sanitizer or a busy machine
 * would measure. */
START_TEST(replan_end_to_end)
{
    char *dir = gxt_tmpdir(), err[256], buf[32];
    gxt_daemon d;
    s_daemon_with(&d, dir,
                  "compiler:\n  replan_ms: 10\n  replan_min_jobs: 1\n  layout_measured: false\n");
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    gx_client_set_timeout(c, 30000);
    gx_graph *g = s_flip_graph();
    gx_tensor *x = gx_tensor_new(GX_F32, 4, (int64_t[]){1, 64, 16, 16});
    gx_tensor *cond = gx_tensor_new(GX_BOOL, 0, NULL);
    for (int64_t i = 0; i < gx_tensor_numel(x); i++)
        ((float *)gx_tensor_data(x))[i] = s_rand();
    *(uint8_t *)gx_tensor_data(cond) = 1;
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    gx_request_add_input(rq, "x", x);
    gx_request_add_input(rq, "c", cond);

    const char *before = s_explained_layout(c, rq, "pre", buf, sizeof buf);
    ck_assert_msg(before && !strcmp(before, "nchw"), "before: %s", before ? before : "unlisted");
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    gx_tensor *first = gx_result_take_output(r, 0);
    gx_result_destroy(&r);
    const char *now = NULL;
    for (int round = 0; round < 600; round++) { /* jobs until the re-plan lands */
        for (int j = 0; j < 20; j++) {
            ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
            ck_assert_int_eq(gx_result_status(r), GX_OK);
            gx_result_destroy(&r);
        }
        now = s_explained_layout(c, rq, "pre", buf, sizeof buf);
        if (now && !strcmp(now, "nhwc"))
            break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(now && !strcmp(now, "nhwc"), "after: %s", now ? now : "unlisted");
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_numel(y), gx_tensor_numel(first));
    ck_assert(gxt_allclose(gx_tensor_cdata(y), gx_tensor_cdata(first), (size_t)gx_tensor_numel(y),
                           1e-5f, 1e-6f));
    gx_result_destroy(&r);
    gx_tensor_destroy(&first);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&cond);
    gx_graph_destroy(&g);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *layout_pass_suite(void)
{
    Suite *s = suite_create("layout_pass");
    TCase *tc = tcase_create("pass");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cnn_same_results);
    tcase_add_test(tc, qconv_block_in_nhwc);
    tcase_add_test(tc, conv_weights_shared);
    tcase_add_test(tc, excite_in_layout);
    tcase_add_test(tc, resize_in_nhwc);
    tcase_add_test(tc, captured_in_each_layout);
    tcase_add_test(tc, if_weighs_branches_by_probability);
    tcase_add_test(tc, measured_times_steer_layouts);
    tcase_add_test(tc, explain_lists_the_choice);
    tcase_add_test(tc, example_cnn_end_to_end);
    tcase_add_test(tc, replan_end_to_end);
    suite_add_tcase(s, tc);
    return s;
}
