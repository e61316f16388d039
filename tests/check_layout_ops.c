/*
 * Ops in the NHWC and NCHW16c layouts (ops/layout.h): the shape helpers,
 * gx_layout_reorder between every pair of layouts (against a naive index
 * formula, round trips, several dtypes and shares), per-channel operands of
 * the elementwise kernels run on physical views, and the pool and
 * BatchNormalization kernels of ops/cpu/pool_layout.c, which must give
 * the plain kernels' results byte for byte for any number of shares.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/layout.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

static const int s_nths[] = {1, 3, 7};

/* A small deterministic generator for the random cases. */
static uint32_t s_seed = 12345;
static int64_t s_rand(int64_t lo, int64_t hi) /* in [lo, hi] */
{
    s_seed = s_seed * 1103515245u + 12345u;
    return lo + (int64_t)((s_seed >> 8) % (uint32_t)(hi - lo + 1));
}

/* Element offset of logical (n, c, h, w) in layout l for logical dims d. */
static int64_t s_index(gx_layout l, const int64_t d[4], int64_t n, int64_t c, int64_t h,
                       int64_t w)
{
    const int64_t C = d[1], H = d[2], W = d[3];
    switch (l) {
    case GX_LAYOUT_NHWC: return ((n * H + h) * W + w) * C + c;
    case GX_LAYOUT_NCHW16C:
        return (((n * (C / 16) + c / 16) * H + h) * W + w) * 16 + c % 16;
    case GX_LAYOUT_PLAIN:
    case GX_LAYOUT_COUNT: break;
    }
    return ((n * C + c) * H + h) * W + w;
}

/* The bytes of plain x placed in layout l by the naive formula. */
static gx_view s_naive(gx_layout l, const gx_view *x)
{
    gx_view p = gx_layout_physical(l, x);
    const size_t es = gx_dtype_size(x->dtype);
    p.data = ot_alloc((size_t)x->numel * es);
    const int64_t *d = x->shape;
    for (int64_t n = 0; n < d[0]; n++)
        for (int64_t c = 0; c < d[1]; c++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++)
                    memcpy((char *)p.data + (size_t)s_index(l, d, n, c, h, w) * es,
                           (const char *)x->data +
                               (size_t)s_index(GX_LAYOUT_PLAIN, d, n, c, h, w) * es,
                           es);
    return p;
}

/* gx_layout_reorder as nth shares. */
static void s_reorder(const gx_view *x, const gx_view *y, int nth)
{
    for (int ith = 0; ith < nth; ith++)
        gx_layout_reorder(x, y, ith, nth);
}

/* A fresh view of x in layout l, reordered from x (any layout). */
static gx_view s_to(gx_layout l, const gx_view *x, int nth)
{
    const gx_view logical = gx_layout_logical(x);
    gx_view y = gx_layout_physical(l, &logical);
    const size_t bytes = (size_t)x->numel * gx_dtype_size(x->dtype);
    y.data = ot_alloc(bytes);
    memset(y.data, 0xA5, bytes);
    s_reorder(x, &y, nth);
    return y;
}

static bool s_same(const gx_view *a, const gx_view *b)
{
    return a->numel == b->numel && a->dtype == b->dtype &&
           !memcmp(a->data, b->data, (size_t)a->numel * gx_dtype_size(a->dtype));
}

/* ---- shapes ---- */

START_TEST(test_layout_shapes)
{
    gx_view x = RANDV(2, 32, 5, 7);
    ck_assert(gx_layout_fits(GX_LAYOUT_PLAIN, &x));
    ck_assert(gx_layout_fits(GX_LAYOUT_NHWC, &x));
    ck_assert(gx_layout_fits(GX_LAYOUT_NCHW16C, &x));
    gx_view odd = RANDV(2, 3, 5, 7), r3 = RANDV(32, 5, 7);
    ck_assert(gx_layout_fits(GX_LAYOUT_NHWC, &odd));
    ck_assert(!gx_layout_fits(GX_LAYOUT_NCHW16C, &odd));
    ck_assert(!gx_layout_fits(GX_LAYOUT_NHWC, &r3));
    ck_assert(gx_layout_fits(GX_LAYOUT_PLAIN, &r3));
    gx_view i64 = ot_rand(GX_I64, SHAPE(1, 16, 2, 2));
    ck_assert(!gx_layout_fits(GX_LAYOUT_NHWC, &i64));
    ck_assert(!gx_layout_fits(GX_LAYOUT_NCHW16C, &i64));

    gx_view h = gx_layout_physical(GX_LAYOUT_NHWC, &x);
    ot_check_shape(&h, SHAPE(2, 5, 7, 32));
    ck_assert_int_eq(h.layout, GX_LAYOUT_NHWC);
    ck_assert_ptr_eq(h.data, x.data);
    ck_assert_int_eq(h.numel, x.numel);
    gx_view b = gx_layout_physical(GX_LAYOUT_NCHW16C, &x);
    ot_check_shape(&b, SHAPE(2, 2, 5, 7, 16));
    ck_assert_int_eq(b.layout, GX_LAYOUT_NCHW16C);
    ck_assert_int_eq(b.numel, x.numel);
    gx_view p = gx_layout_physical(GX_LAYOUT_PLAIN, &x);
    ot_check_shape(&p, SHAPE(2, 32, 5, 7));

    const gx_view *views[] = {&h, &b, &p};
    for (int i = 0; i < 3; i++) {
        int64_t d[4];
        gx_layout_dims(views[i], d);
        ck_assert(!memcmp(d, x.shape, sizeof d));
        gx_view l = gx_layout_logical(views[i]);
        ot_check_shape(&l, SHAPE(2, 32, 5, 7));
        ck_assert_int_eq(l.layout, GX_LAYOUT_PLAIN);
        ck_assert_ptr_eq(l.data, x.data);
    }
    ck_assert_str_eq(gx_layout_name(GX_LAYOUT_PLAIN), "nchw");
    ck_assert_str_eq(gx_layout_name(GX_LAYOUT_NHWC), "nhwc");
    ck_assert_str_eq(gx_layout_name(GX_LAYOUT_NCHW16C), "nchw16c");
}
END_TEST

/* ---- reorders ---- */

/* Every pair of layouts that fit x's shape, against the naive placement,
 * for each nth, and round trips back to plain. */
static void s_check_reorders(gx_dtype dt, const int64_t shape[4])
{
    gx_view x = ot_rand(dt, 4, shape);
    const gx_layout ls[] = {GX_LAYOUT_PLAIN, GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    const int nl = shape[1] % 16 == 0 ? 3 : 2;
    for (int a = 0; a < nl; a++) {
        gx_view src = s_naive(ls[a], &x);
        for (int b = 0; b < nl; b++) {
            gx_view want = s_naive(ls[b], &x);
            for (int t = 0; t < 3; t++) {
                gx_view got = s_to(ls[b], &src, s_nths[t]);
                ck_assert_msg(s_same(&got, &want),
                              "reorder %s -> %s of [%lld,%lld,%lld,%lld] dtype %d nth %d",
                              gx_layout_name(ls[a]), gx_layout_name(ls[b]), (long long)shape[0],
                              (long long)shape[1], (long long)shape[2], (long long)shape[3],
                              (int)dt, s_nths[t]);
                gx_view back = s_to(GX_LAYOUT_PLAIN, &got, s_nths[t]);
                ck_assert(s_same(&back, &x));
            }
        }
    }
}

START_TEST(test_layout_reorder)
{
    static const int64_t shapes[][4] = {
        {1, 16, 1, 1},  {1, 16, 1, 7},  {2, 16, 5, 1},   {1, 32, 4, 4},  {3, 48, 17, 19},
        {2, 64, 16, 16}, {1, 3, 1, 1},  {2, 3, 7, 5},    {1, 5, 33, 1},  {1, 1, 9, 9},
        {2, 17, 3, 18}, {1, 40, 1, 31}, {1, 35, 16, 16}, {2, 160, 2, 3}, {1, 1, 1, 1},
    };
    const gx_dtype dts[] = {GX_F32, GX_U8, GX_F16, GX_I64};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 4; d++)
        {
            s_check_reorders(dts[d], shapes[s]);
            ot_free_all(); /* the harness holds a bounded number of blocks */
        }
    for (int i = 0; i < 40; i++) {
        const int64_t c = s_rand(0, 1) ? 16 * s_rand(1, 5) : s_rand(1, 40);
        const int64_t shape[4] = {s_rand(1, 3), c, s_rand(1, 21), s_rand(1, 21)};
        s_check_reorders(GX_F32, shape);
        ot_free_all();
    }
}
END_TEST

/* ---- per-channel operands of elementwise ops ---- */

/* Add of x (plain, [N, C, H, W]) and c run in layout l on physical views
 * must equal the plain Add reordered. */
static void s_check_operand(gx_layout l, const gx_view *x, const gx_view *c)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view want;
    char err[ERRLEN];
    const gx_view in[2] = {*x, *c};
    ck_assert_int_eq(ot_run(GX_OP_ADD, NULL, 2, in, 1, av, &want, err), GX_OK);
    gx_view op;
    ck_assert(gx_layout_operand(l, c, x->shape, &op));
    ck_assert_ptr_null(op.data);
    ck_assert_int_eq(op.numel, c->numel);
    op.data = ot_alloc((size_t)op.numel * sizeof(float));
    gx_layout_operand_fill(l, c, x->shape, &op);
    const gx_view px = s_to(l, x, 1);
    gx_view py = gx_layout_physical(l, &want);
    py.data = ot_alloc((size_t)want.numel * sizeof(float));
    const gx_view pin[2] = {px, op};
    gx_view pout[1] = {py};
    for (int t = 0; t < 3; t++) {
        memset(py.data, 0xFF, (size_t)py.numel * sizeof(float));
        gx_kargs k = {.attr = av, .n_in = 2, .in = pin, .n_out = 1, .out = pout,
                      .nth = s_nths[t]};
        for (k.ith = 0; k.ith < k.nth; k.ith++)
            gx_cpu_kernel(GX_OP_ADD)(&k);
        gx_view back = s_to(GX_LAYOUT_PLAIN, &py, 1);
        ck_assert_msg(s_same(&back, &want), "%s: Add with [%d-D operand] nth %d",
                      gx_layout_name(l), c->ndim, s_nths[t]);
    }
}

START_TEST(test_layout_operands)
{
    const gx_layout ls[] = {GX_LAYOUT_PLAIN, GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    static const int64_t shapes[][4] = {{2, 32, 5, 7}, {1, 16, 1, 1}, {3, 16, 9, 1}};
    for (int s = 0; s < 3; s++) {
        const int64_t *d = shapes[s];
        gx_view x = ot_rand(GX_F32, 4, d);
        const int64_t C = d[1];
        gx_view cs[] = {
            RANDV(C, 1, 1), RANDV(1, C, 1, 1), RANDV(1), RANDV(1, 1, 1, 1),
            ot_rand(GX_F32, 0, NULL), ot_rand(GX_F32, 4, d),
        };
        for (int l = 0; l < 3; l++)
            for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
                s_check_operand(ls[l], &x, &cs[i]);
    }
    /* an odd channel count in NHWC */
    gx_view x = RANDV(2, 5, 3, 4);
    gx_view c5 = RANDV(5, 1, 1), c15 = RANDV(1, 5, 1, 1);
    s_check_operand(GX_LAYOUT_NHWC, &x, &c5);
    s_check_operand(GX_LAYOUT_NHWC, &x, &c15);

    /* what does not broadcast per channel is refused in the other layouts */
    const int64_t d[4] = {2, 32, 5, 7};
    gx_view refused[] = {RANDV(1, 1, 5, 7), RANDV(7), RANDV(5, 7), RANDV(2, 32, 1, 1),
                         RANDV(32), RANDV(1, 32, 5, 1), ot_rand(GX_F32, SHAPE(1, 1, 1, 32, 1))};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_msg(!gx_layout_operand(GX_LAYOUT_NHWC, &refused[i], d, NULL),
                      "nhwc took refused operand %zu", i);
        ck_assert_msg(!gx_layout_operand(GX_LAYOUT_NCHW16C, &refused[i], d, NULL),
                      "nchw16c took refused operand %zu", i);
    }
    gx_view per = RANDV(32, 1, 1);
    gx_view out;
    ck_assert(gx_layout_operand(GX_LAYOUT_NHWC, &per, d, &out));
    ot_check_shape(&out, SHAPE(1, 1, 1, 32));
    ck_assert(gx_layout_operand(GX_LAYOUT_NCHW16C, &per, d, &out));
    ot_check_shape(&out, SHAPE(1, 2, 1, 1, 16));
}
END_TEST

/* ---- pools and BatchNormalization ---- */

/* Runs op plainly (the reference, nth = 1) and then its layout-l kernel on
 * x reordered into l for each nth: the output reordered back must be the
 * reference's bytes. Returns false (nothing checked) when infer refuses
 * the node. */
static bool s_check_op(gx_op op, const gx_node *node, gx_layout l, int n_in, const gx_view *in)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view want;
    char err[ERRLEN];
    if (ot_run(op, node, n_in, in, 1, av, &want, err) != GX_OK)
        return false;
    const gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = &want};
    char why[128];
    gx_kernel_fn fn = gx_cpu_layout_kernel(op, l, &ic, why, sizeof why);
    ck_assert_msg(fn != NULL, "%s %s: refused: %s", gx_layout_name(l), gx_op_name(op), why);
    gx_view pin[5];
    for (int i = 0; i < n_in; i++)
        pin[i] = in[i];
    pin[0] = s_to(l, &in[0], 1);
    gx_view py = gx_layout_physical(l, &want);
    py.data = ot_alloc((size_t)want.numel * sizeof(float));
    for (int t = 0; t < 3; t++) {
        memset(py.data, 0xFF, (size_t)py.numel * sizeof(float));
        gx_kargs k = {.attr = av, .n_in = n_in, .in = pin, .n_out = 1, .out = &py,
                      .nth = s_nths[t]};
        for (k.ith = 0; k.ith < k.nth; k.ith++)
            fn(&k);
        gx_view back = s_to(GX_LAYOUT_PLAIN, &py, 1);
        if (!s_same(&back, &want)) {
            const float *g = back.data, *w = want.data;
            int64_t i = 0;
            while (i < want.numel && !memcmp(&g[i], &w[i], sizeof *g))
                i++;
            ck_abort_msg("%s %s of [%lld,%lld,%lld,%lld] nth %d: element %lld is %a, plain %a",
                         gx_layout_name(l), gx_op_name(op), (long long)in[0].shape[0],
                         (long long)in[0].shape[1], (long long)in[0].shape[2],
                         (long long)in[0].shape[3], s_nths[t], (long long)i, (double)g[i],
                         (double)w[i]);
        }
    }
    return true;
}

/* A random float32 [N, C, H, W] input for layout l, some elements NaN,
 * 0, -0 or 1 (ties in MaxPool). */
static gx_view s_input(gx_layout l)
{
    const int64_t c = l == GX_LAYOUT_NCHW16C || s_rand(0, 1) ? 16 * s_rand(1, 2) : s_rand(1, 40);
    gx_view x = ot_rand(GX_F32, SHAPE(s_rand(1, 3), c, s_rand(1, 19), s_rand(1, 19)));
    float *v = x.data;
    for (int64_t i = 0; i < x.numel; i++) {
        const int64_t r = s_rand(0, 99);
        if (r == 0)
            v[i] = NAN;
        else if (r < 4)
            v[i] = r == 1 ? 0.0f : -0.0f; /* ties of the two zeros keep the first */
        else if (r < 8)
            v[i] = 1.0f;
    }
    return x;
}

/* A random window node for op (MaxPool or AveragePool): kernel, strides,
 * dilations (MaxPool), pads or auto_pad, ceil_mode, count_include_pad. */
static gx_node *s_window_node(gx_op op, gx_attr *a, int64_t *ints)
{
    int n = 0;
    int64_t *k = ints, *s = ints + 2, *dl = ints + 4, *p = ints + 6;
    for (int i = 0; i < 2; i++) {
        k[i] = s_rand(1, 4);
        s[i] = s_rand(1, 3);
        dl[i] = op == GX_OP_MAXPOOL && s_rand(0, 2) == 0 ? 2 : 1;
        p[i] = s_rand(0, k[i] - 1);
        p[i + 2] = s_rand(0, k[i] - 1);
    }
    a[n++] = (gx_attr){.name = "kernel_shape", .type = GX_ATTR_INTS, .ints = k, .n = 2};
    a[n++] = (gx_attr){.name = "strides", .type = GX_ATTR_INTS, .ints = s, .n = 2};
    if (op == GX_OP_MAXPOOL)
        a[n++] = (gx_attr){.name = "dilations", .type = GX_ATTR_INTS, .ints = dl, .n = 2};
    const int64_t pad = s_rand(0, 4);
    if (pad == 0)
        a[n++] = A_STR("auto_pad", "SAME_UPPER");
    else if (pad == 1)
        a[n++] = A_STR("auto_pad", "SAME_LOWER");
    else if (pad == 2)
        a[n++] = A_STR("auto_pad", "VALID");
    else
        a[n++] = (gx_attr){.name = "pads", .type = GX_ATTR_INTS, .ints = p, .n = 4};
    if (pad >= 2)
        a[n++] = A_INT("ceil_mode", s_rand(0, 1));
    if (op == GX_OP_AVERAGEPOOL)
        a[n++] = A_INT("count_include_pad", s_rand(0, 1));
    static gx_node node;
    node = (gx_node){.n_attr = n, .attr = a};
    return &node;
}

START_TEST(test_layout_pools)
{
    const gx_layout ls[] = {GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    const gx_op ops[] = {GX_OP_MAXPOOL, GX_OP_AVERAGEPOOL};
    for (int li = 0; li < 2; li++) {
        for (int oi = 0; oi < 2; oi++) {
            int ran = 0;
            for (int i = 0; i < 120; i++) {
                gx_attr a[8];
                int64_t ints[10];
                gx_node *node = s_window_node(ops[oi], a, ints);
                gx_view x = s_input(ls[li]);
                ran += s_check_op(ops[oi], node, ls[li], 1, &x);
                ot_free_all();
            }
            ck_assert_msg(ran >= 60, "%s %s: only %d valid cases", gx_layout_name(ls[li]),
                          gx_op_name(ops[oi]), ran);
        }
    }
    /* the common windows */
    gx_view x = RANDV(2, 32, 16, 16);
    for (int li = 0; li < 2; li++) {
        ck_assert(s_check_op(GX_OP_MAXPOOL,
                             NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2)), ls[li],
                             1, &x));
        ck_assert(s_check_op(GX_OP_MAXPOOL,
                             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1)),
                             ls[li], 1, &x));
        ck_assert(s_check_op(GX_OP_AVERAGEPOOL,
                             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("strides", 2, 2),
                                  A_INTS("pads", 1, 1, 1, 1), A_INT("ceil_mode", 1)),
                             ls[li], 1, &x));
        ck_assert(s_check_op(GX_OP_AVERAGEPOOL,
                             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1),
                                  A_INT("count_include_pad", 1)),
                             ls[li], 1, &x));
    }
}
END_TEST

START_TEST(test_layout_global_pools)
{
    const gx_layout ls[] = {GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    const gx_op ops[] = {GX_OP_GLOBALMAXPOOL, GX_OP_GLOBALAVERAGEPOOL};
    for (int li = 0; li < 2; li++)
        for (int oi = 0; oi < 2; oi++)
            for (int i = 0; i < 40; i++) {
                gx_view x = s_input(ls[li]);
                ck_assert(s_check_op(ops[oi], NULL, ls[li], 1, &x));
                ot_free_all();
            }
    /* -1 first, then zeros of both signs: partials end at either zero,
     * the ties of the fold */
    gx_view zeros = RANDV(2, 32, 7, 9);
    for (int64_t i = 0; i < zeros.numel; i++)
        ((float *)zeros.data)[i] = i % 63 == 0 ? -1.0f : s_rand(0, 1) ? 0.0f : -0.0f;
    for (int oi = 0; oi < 2; oi++)
        for (int li = 0; li < 2; li++)
            ck_assert(s_check_op(ops[oi], NULL, ls[li], 1, &zeros));
    /* long channels (many partial sums), wide NHWC rows */
    gx_view big = RANDV(2, 48, 23, 29), wide = RANDV(1, 67, 5, 3);
    for (int oi = 0; oi < 2; oi++) {
        for (int li = 0; li < 2; li++)
            ck_assert(s_check_op(ops[oi], NULL, ls[li], 1, &big));
        ck_assert(s_check_op(ops[oi], NULL, GX_LAYOUT_NHWC, 1, &wide));
    }
}
END_TEST

static gx_view s_positive(int64_t n)
{
    gx_view v = RANDV(n);
    for (int64_t i = 0; i < n; i++)
        ((float *)v.data)[i] = fabsf(((float *)v.data)[i]) + 0.1f;
    return v;
}

START_TEST(test_layout_batchnorm)
{
    const gx_layout ls[] = {GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    for (int li = 0; li < 2; li++) {
        for (int i = 0; i < 40; i++) {
            gx_view x = s_input(ls[li]);
            const int64_t C = x.shape[1];
            gx_view in[5] = {x, RANDV(C), RANDV(C), RANDV(C), s_positive(C)};
            ck_assert(s_check_op(GX_OP_BATCHNORM, NODE(A_FLOAT("epsilon", 1e-3)), ls[li], 5,
                                 in));
            ot_free_all();
        }
        /* more channels than the kernel keeps factors for at once */
        gx_view x = RANDV(2, 320, 3, 5);
        gx_view in[5] = {x, RANDV(320), RANDV(320), RANDV(320), s_positive(320)};
        ck_assert(s_check_op(GX_OP_BATCHNORM, NULL, ls[li], 5, in));
    }
}
END_TEST

/* InstanceNormalization: the plain kernel's bits (statistics in the same
 * order), random shapes, a plane of more than one 4096-pixel block of
 * sums, channels past a multiple of 16 in NHWC. */
START_TEST(test_layout_instancenorm)
{
    const gx_layout ls[] = {GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    for (int li = 0; li < 2; li++) {
        for (int i = 0; i < 20; i++) {
            gx_view x = s_input(ls[li]);
            const int64_t C = x.shape[1];
            gx_view in[3] = {x, RANDV(C), RANDV(C)};
            ck_assert(s_check_op(GX_OP_INSTANCENORM, NODE(A_FLOAT("epsilon", 1e-3)), ls[li], 3,
                                 in));
            ot_free_all();
        }
        gx_view x = RANDV(2, 32, 70, 61); /* 4270 pixels: two blocks */
        gx_view in[3] = {x, RANDV(32), RANDV(32)};
        ck_assert(s_check_op(GX_OP_INSTANCENORM, NULL, ls[li], 3, in));
        ot_free_all();
    }
    gx_view x = RANDV(1, 21, 5, 7);
    gx_view in[3] = {x, RANDV(21), RANDV(21)};
    ck_assert(s_check_op(GX_OP_INSTANCENORM, NULL, GX_LAYOUT_NHWC, 3, in));
}
END_TEST

/* Each refusal names the layout and the reason. */
static void s_expect_refused(gx_op op, const gx_node *node, gx_layout l, int n_in,
                             const gx_view *in, int n_out, const char *want)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[3];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(op, node, n_in, in, 1, av, n_out, out, err), GX_OK);
    const gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = n_out, .out = out};
    char why[128];
    ck_assert_ptr_null(gx_cpu_layout_kernel(op, l, &ic, why, sizeof why));
    ck_assert_str_eq(why, want);
}

/* Concat in each layout along every axis (negative too) of three inputs:
 * the plain kernel's bytes, shares 1, 2 and 3. */
START_TEST(test_layout_concat)
{
    const gx_layout ls[] = {GX_LAYOUT_NHWC, GX_LAYOUT_NCHW16C};
    const int64_t base[4] = {2, 32, 5, 7};
    for (int li = 0; li < 2; li++)
        for (int axis = -4; axis < 4; axis++) {
            const int a = axis < 0 ? axis + 4 : axis;
            gx_view in[3], pin[3];
            for (int i = 0; i < 3; i++) {
                int64_t sh[4];
                memcpy(sh, base, sizeof sh);
                sh[a] = a == 1 ? 16 * (i + 1) : i + 1;
                in[i] = ot_rand(GX_F32, 4, sh);
                pin[i] = s_to(ls[li], &in[i], 1);
            }
            gx_attrval av[GX_MAX_ATTRS];
            gx_view want;
            char err[ERRLEN];
            ck_assert_int_eq(ot_run(GX_OP_CONCAT, NODE(A_INT("axis", axis)), 3, in, 1, av, &want,
                                    err),
                             GX_OK);
            const gx_infer ic = {.attr = av, .n_in = 3, .in = in, .n_out = 1, .out = &want};
            char why[128];
            gx_kernel_fn fn = gx_cpu_layout_kernel(GX_OP_CONCAT, ls[li], &ic, why, sizeof why);
            ck_assert_msg(fn != NULL, "%s", why);
            gx_view py = gx_layout_physical(ls[li], &want);
            py.data = ot_alloc((size_t)want.numel * sizeof(float));
            for (int t = 0; t < 3; t++) {
                memset(py.data, 0xFF, (size_t)py.numel * sizeof(float));
                gx_kargs k = {.attr = av, .n_in = 3, .in = pin, .n_out = 1, .out = &py,
                              .nth = s_nths[t]};
                for (k.ith = 0; k.ith < k.nth; k.ith++)
                    fn(&k);
                gx_view back = s_to(GX_LAYOUT_PLAIN, &py, 1);
                ck_assert_msg(s_same(&back, &want), "%s Concat axis %d nth %d",
                              gx_layout_name(ls[li]), axis, s_nths[t]);
            }
            ot_free_all();
        }
    /* NCHW16c needs every input's channels a multiple of 16 */
    gx_view odd[2] = {RANDV(1, 16, 2, 2), RANDV(1, 8, 2, 2)};
    s_expect_refused(GX_OP_CONCAT, NODE(A_INT("axis", 1)), GX_LAYOUT_NCHW16C, 2, odd, 1,
                     "nchw16c: Concat of a 4-D float32 [.., 8, ..] input");
}
END_TEST

START_TEST(test_layout_refusals)
{
    gx_view x = RANDV(1, 32, 4, 4), odd = RANDV(1, 5, 4, 4), x5 = RANDV(1, 16, 2, 2, 2);
    s_expect_refused(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), GX_LAYOUT_NHWC, 1, &x, 2,
                     "nhwc: MaxPool with the Indices output");
    s_expect_refused(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), GX_LAYOUT_NCHW16C, 1,
                     &odd, 1, "nchw16c: MaxPool with 5 channels (not a multiple of 16)");
    s_expect_refused(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2, 2, 2)), GX_LAYOUT_NHWC, 1,
                     &x5, 1, "nhwc: AveragePool of a 5-D float32 input (only 4-D float32)");
    s_expect_refused(GX_OP_LPPOOL, NODE(A_INTS("kernel_shape", 2, 2)), GX_LAYOUT_NHWC, 1, &x, 1,
                     "nhwc: LpPool has no kernel for it");
    s_expect_refused(GX_OP_GLOBALLPPOOL, NULL, GX_LAYOUT_NCHW16C, 1, &x, 1,
                     "nchw16c: GlobalLpPool has no kernel for it");
    gx_view bn[5] = {x, RANDV(32), RANDV(32), RANDV(32), s_positive(32)};
    s_expect_refused(GX_OP_BATCHNORM, NODE(A_INT("training_mode", 1)), GX_LAYOUT_NHWC, 5, bn, 3,
                     "nhwc: BatchNormalization in training mode");
    gx_view u8 = ot_rand(GX_U8, SHAPE(1, 16, 4, 4));
    s_expect_refused(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), GX_LAYOUT_NCHW16C, 1,
                     &u8, 1, "nchw16c: MaxPool of a 4-D uint8 input (only 4-D float32)");
}
END_TEST

Suite *layout_ops_suite(void)
{
    Suite *s = suite_create("layout_ops");
    TCase *tc = tcase_create("layout_ops");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_layout_shapes);
    tcase_add_test(tc, test_layout_reorder);
    tcase_add_test(tc, test_layout_operands);
    tcase_add_test(tc, test_layout_pools);
    tcase_add_test(tc, test_layout_global_pools);
    tcase_add_test(tc, test_layout_instancenorm);
    tcase_add_test(tc, test_layout_concat);
    tcase_add_test(tc, test_layout_batchnorm);
    tcase_add_test(tc, test_layout_refusals);
    suite_add_tcase(s, tc);
    return s;
}
