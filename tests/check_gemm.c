/*
 * The packed MatMul/Gemm kernels (ops/gemm.h) against a double-precision
 * reference, over shapes that hit every edge of their blocking (1 to 17
 * rows, K from 1, N not a multiple of 16), Gemm's transB, alpha, beta and
 * every broadcast of C, and split between 1, 2 and 3 threads: the shares
 * tile the output and the bits do not depend on the split. Then the
 * prepare pass in a compiled plan: which steps it packs, and the plan's
 * results against the same plan compiled without it.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "ops/gemm.h"
#include "ops/qgemm.h"
#include "ops/schema.h"
#include "tests/testutil.h"

static uint64_t s_seed = 88172645463325252ull;

static float s_rand(void)
{
    s_seed ^= s_seed << 13, s_seed ^= s_seed >> 7, s_seed ^= s_seed << 17;
    return (float)(s_seed % 2001) / 1000.0f - 1.0f;
}

static float *s_fill(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = s_rand();
    return p;
}

static gx_view s_view(int ndim, const int64_t *shape, float *data)
{
    gx_view v = {.dtype = GX_F32, .ndim = ndim, .numel = 1, .data = data};
    for (int d = 0; d < ndim; d++)
        v.numel *= (v.shape[d] = shape[d]);
    return v;
}

/* One product through the packed kernel with nth threads (shares run one
 * after the other), y written; attr: Gemm's, or NULL for MatMul. */
static void s_run_packed(gx_op op, const gx_attrval *attr, const gx_view *a, const gx_view *b,
                         const gx_view *c, const gx_view *y, int nth)
{
    char why[128];
    ck_assert_msg(gx_cpu_gemm_packable(op, attr, a, b, y, true, why, sizeof why), "%s", why);
    float *packed = malloc(gx_cpu_gemm_packed_floats(op, attr, b) * sizeof(float));
    ck_assert_ptr_nonnull(packed);
    gx_cpu_gemm_pack(op, attr, b, packed);
    gx_view in[3] = {*a, *b, c ? *c : (gx_view){.ndim = -1}};
    in[1].data = packed;
    const gx_kernel_fn fn = gx_cpu_gemm_packed_kernel(op);
    ck_assert(gx_cpu_gemm_is_packed(fn));
    unsigned char *mark = calloc((size_t)y->numel + 1, 1);
    for (int ith = 0; ith < nth; ith++) {
        const gx_kargs k = {.attr = attr, .n_in = op == GX_OP_GEMM ? 3 : 2, .in = in,
                            .n_out = 1, .out = y, .ith = ith, .nth = nth};
        gx_gemm_block blk;
        gx_cpu_gemm_packed_share(&k, y, &blk);
        for (int64_t r = blk.r0; r < blk.r1; r++)
            for (int64_t col = blk.c0; col < blk.c1; col++)
                mark[r * blk.n + col]++;
        fn(&k);
    }
    for (int64_t e = 0; e < y->numel; e++) /* the shares tile the output */
        ck_assert_int_eq(mark[e], 1);
    free(mark);
    free(packed);
}

/* The kernels of each ISA the CPU has (the loop's _i: 0 AVX-512, 1 AVX2,
 * 2 baseline); the rest are skipped. */
static const char *const s_isas[] = {"avx512", "avx2", "baseline"};

/* MatMul A [rows, K] x B [K, N] for every edge; nth 1, 2, 3 give the
 * same bits, close to the reference. */
START_TEST(test_matmul_shapes)
{
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    static const int64_t ms[] = {1, 2, 3, 5, 7, 8, 9, 17};
    static const int64_t ks[] = {1, 3, 16, 33, 700, 1000}; /* the last two in K blocks */
    static const int64_t ns[] = {1, 5, 16, 17, 40, 64};
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                const int64_t m = ms[mi], kk = ks[ki], n = ns[ni];
                float *a = s_fill(m * kk), *b = s_fill(kk * n), *ref = malloc(sizeof(float) * (size_t)(m * n));
                float *y[3];
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double s = 0;
                        for (int64_t l = 0; l < kk; l++)
                            s += (double)a[i * kk + l] * b[l * n + j];
                        ref[i * n + j] = (float)s;
                    }
                const gx_view va = s_view(2, (int64_t[]){m, kk}, a),
                              vb = s_view(2, (int64_t[]){kk, n}, b);
                for (int t = 0; t < 3; t++) {
                    y[t] = calloc((size_t)(m * n), sizeof(float));
                    const gx_view vy = s_view(2, (int64_t[]){m, n}, y[t]);
                    s_run_packed(GX_OP_MATMUL, NULL, &va, &vb, NULL, &vy, t + 1);
                }
                ck_assert_msg(gxt_allclose(y[0], ref, (size_t)(m * n), 1e-4f, 1e-4f),
                              "MatMul [%lld,%lld]x[%lld,%lld]", (long long)m, (long long)kk,
                              (long long)kk, (long long)n);
                ck_assert(!memcmp(y[0], y[1], sizeof(float) * (size_t)(m * n)));
                ck_assert(!memcmp(y[0], y[2], sizeof(float) * (size_t)(m * n)));
                for (int t = 0; t < 3; t++)
                    free(y[t]);
                free(a), free(b), free(ref);
            }
}
END_TEST

/* gx_cpu_gemm_rows: B read in place with a row stride wider than N, N
 * with and without a partial last panel (and less than one: a conv of a
 * few output positions), K whole and in blocks, every ISA; then
 * accumulated. */
START_TEST(test_plain_rows)
{
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    static const int64_t ns[] = {16, 21, 40, 64, 4};
    enum { S_NS = sizeof ns / sizeof *ns };
    for (size_t ni = 0; ni < 2 * S_NS; ni++) {
        /* the second time, K in blocks */
        const int64_t m = 11, kk = ni < S_NS ? 29 : 800, n = ns[ni % S_NS], ldb = n + 3;
        float *a = s_fill(m * kk), *b = s_fill(kk * ldb), ref[11 * 64], y[11 * 64];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t l = 0; l < kk; l++)
                    s += (double)a[i * kk + l] * b[l * ldb + j];
                ref[i * n + j] = (float)s;
            }
        gx_cpu_gemm_rows(m, n, kk, a, kk, b, ldb, y, n, false);
        ck_assert_msg(gxt_allclose(y, ref, (size_t)(m * n), 1e-4f, 1e-4f), "N %lld",
                      (long long)n);
        /* accumulate: y += a · b, so y = 2 ref */
        gx_cpu_gemm_rows(m, n, kk, a, kk, b, ldb, y, n, true);
        for (int64_t i = 0; i < m * n; i++)
            ref[i] *= 2.0f;
        ck_assert_msg(gxt_allclose(y, ref, (size_t)(m * n), 1e-4f, 1e-4f), "N %lld accumulated",
                      (long long)n);
        free(a), free(b);
    }
}
END_TEST

/* A of rank 3 and rank 1: the leading dims are just more rows. */
START_TEST(test_matmul_ranks)
{
    const int64_t kk = 20, n = 19;
    float *a = s_fill(2 * 3 * kk), *b = s_fill(kk * n), *ref = malloc(sizeof(float) * 6 * n);
    float *y = calloc(6 * (size_t)n, sizeof(float));
    for (int64_t i = 0; i < 6; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < kk; l++)
                s += (double)a[i * kk + l] * b[l * n + j];
            ref[i * n + j] = (float)s;
        }
    const gx_view vb = s_view(2, (int64_t[]){kk, n}, b);
    gx_view va = s_view(3, (int64_t[]){2, 3, kk}, a), vy = s_view(3, (int64_t[]){2, 3, n}, y);
    s_run_packed(GX_OP_MATMUL, NULL, &va, &vb, NULL, &vy, 2);
    ck_assert(gxt_allclose(y, ref, 6 * (size_t)n, 1e-4f, 1e-4f));
    va = s_view(1, (int64_t[]){kk}, a);
    vy = s_view(1, (int64_t[]){n}, y);
    memset(y, 0, 6 * (size_t)n * sizeof(float));
    s_run_packed(GX_OP_MATMUL, NULL, &va, &vb, NULL, &vy, 3);
    ck_assert(gxt_allclose(y, ref, (size_t)n, 1e-4f, 1e-4f));
    free(a), free(b), free(ref), free(y);
}
END_TEST

/* Gemm: transB, alpha, beta and C as a scalar, [N], [1, N], [M, 1] and
 * [M, N]; beta 0 never reads C (a NaN there stays out). */
START_TEST(test_gemm_forms)
{
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    const int64_t m = 5, kk = 900, n = 21; /* K in blocks: C's beta on the first only */
    static const int64_t cshape[][2] = {{0, 0}, {1, 0}, {1, 1}, {1, 21}, {5, 1}, {5, 21}};
    static const int cnd[] = {-1, 0, 1, 2, 2, 2};
    for (int tb = 0; tb < 2; tb++)
        for (size_t ci = 0; ci < sizeof cnd / sizeof *cnd; ci++)
            for (int ab = 0; ab < 3; ab++) {
                const float alpha = ab == 1 ? 0.5f : 1.0f, beta = ab == 2 ? 0.0f : ab ? 2.0f : 1.0f;
                gx_attrval attr[GX_GEMM_NATTRS] = {0};
                attr[GX_GEMM_ALPHA].f = alpha;
                attr[GX_GEMM_BETA].f = beta;
                attr[GX_GEMM_TRANSB].i = tb;
                float *a = s_fill(m * kk), *b = s_fill(kk * n), *c = s_fill(m * n);
                if (beta == 0.0f)
                    for (int64_t i = 0; i < m * n; i++)
                        c[i] = NAN;
                const int64_t *cs = cshape[ci];
                const int nd = cnd[ci];
                float ref[5 * 21], y[5 * 21];
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double s = 0;
                        for (int64_t l = 0; l < kk; l++)
                            s += (double)a[i * kk + l] * (tb ? b[j * kk + l] : b[l * n + j]);
                        double cv = 0;
                        if (nd >= 0 && beta != 0.0f) {
                            const int64_t ci0 = nd == 2 && cs[0] > 1 ? i : 0;
                            const int64_t cj = nd >= 1 && cs[nd - 1] > 1 ? j : 0;
                            cv = c[ci0 * (nd == 2 ? cs[1] : 1) + cj];
                        }
                        ref[i * n + j] = (float)(alpha * s + beta * cv);
                    }
                const gx_view va = s_view(2, (int64_t[]){m, kk}, a);
                const gx_view vb = s_view(2, tb ? (int64_t[]){n, kk} : (int64_t[]){kk, n}, b);
                const gx_view vc = s_view(nd < 0 ? 0 : nd, nd == 1 ? &cs[1] : cs, c);
                const gx_view vy = s_view(2, (int64_t[]){m, n}, y);
                s_run_packed(GX_OP_GEMM, attr, &va, &vb, nd >= 0 ? &vc : NULL, &vy, 2);
                ck_assert_msg(gxt_allclose(y, ref, (size_t)(m * n), 1e-4f, 1e-4f),
                              "transB %d C form %zu alpha %g beta %g", tb, ci, alpha, beta);
                free(a), free(b), free(c);
            }
}
END_TEST

/* The start-up check tells a right product from a wrong one. */
static void s_wrong_product(void *ctx, int64_t rows, int64_t kk, int64_t cols, const float *a,
                            const float *b, float *y)
{
    gx_cpu_gemm_rows(rows, cols, kk, a, kk, b, cols, y, cols, false);
    y[rows * cols - 1] += 0.5f; /* one element off */
}

START_TEST(test_verify)
{
    char why[256];
    ck_assert_msg(gx_cpu_gemm_selfcheck(why, sizeof why), "%s", why);
    ck_assert(!gx_cpu_gemm_verify("a broken kernel", s_wrong_product, NULL, 5, 7, 33, why,
                                  sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "a broken kernel computed"));
    ck_assert_ptr_nonnull(strstr(why, "[4,32]"));
}
END_TEST

/* What the packed kernels refuse, each with a reason. */
START_TEST(test_not_packable)
{
    char why[128];
    float d[4] = {0};
    gx_view a = s_view(2, (int64_t[]){2, 2}, d), b = a, y = a;
    ck_assert(!gx_cpu_gemm_packable(GX_OP_MATMUL, NULL, &a, &b, &y, false, why, sizeof why));
    ck_assert_str_eq(why, "B is not a constant");
    gx_view b3 = s_view(3, (int64_t[]){1, 2, 2}, d);
    ck_assert(!gx_cpu_gemm_packable(GX_OP_MATMUL, NULL, &a, &b3, &y, true, why, sizeof why));
    gx_attrval attr[GX_GEMM_NATTRS] = {0};
    attr[GX_GEMM_TRANSA].i = 1;
    ck_assert(!gx_cpu_gemm_packable(GX_OP_GEMM, attr, &a, &b, &y, true, why, sizeof why));
    ck_assert_str_eq(why, "A is transposed");
    b.dtype = GX_F64;
    ck_assert(!gx_cpu_gemm_packable(GX_OP_MATMUL, NULL, &a, &b, &y, true, why, sizeof why));
}
END_TEST

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 1ll << 30,
                                         .max_arena_bytes = 1ll << 32};

/* Runs plan p on in (one thread, step by step); returns its output 0. */
static float *s_exec(const gxd_plan *p, const gx_view *in, size_t n)
{
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err) == GX_OK, "%s",
                  err);
    for (size_t s = 0; s < p->n_steps; s++)
        ck_assert_int_eq(gxd_exec_step(&f, s), GX_OK);
    float *y = malloc(n * sizeof *y);
    memcpy(y, gxd_frame_output(&f, 0)->data, n * sizeof *y);
    gxd_frame_fini(&f);
    free(arena);
    return y;
}

/* x [1, 48] -> MatMul W1 [48, 40] -> Add b -> Relu -> Gemm (transB) W2
 * [24, 40] + c -> y; and a MatMul of two inputs, which stays on the BLAS.
 * The prepare pass packs W1 and W2 (explain lists them), the epilogue
 * still fuses, and the plan computes what it computes without the pass
 * (the BLAS kernels) within float rounding. */
START_TEST(test_prepare_pass)
{
    gx_graph *g = gx_graph_new("prep");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 48});
    gx_graph_add_input(g, "z", GX_F32, 2, (int64_t[]){24, 3});
    float *w1 = s_fill(48 * 40), *b1 = s_fill(40), *w2 = s_fill(24 * 40), *c2 = s_fill(24);
    gxt_const(g, "W1", GX_F32, 2, (int64_t[]){48, 40}, w1);
    gxt_const(g, "b1", GX_F32, 1, (int64_t[]){40}, b1);
    gxt_const(g, "W2", GX_F32, 2, (int64_t[]){24, 40}, w2);
    gxt_const(g, "c2", GX_F32, 1, (int64_t[]){24}, c2);
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"x", "W1"}, 1, (const char *[]){"h"});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"h", "b1"}, 1, (const char *[]){"hb"});
    gx_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"hb"}, 1, (const char *[]){"r"});
    gx_node *n = gx_graph_add_node(g, "Gemm", "gemm", 3, (const char *[]){"r", "W2", "c2"}, 1,
                                   (const char *[]){"y0"});
    gx_node_set_int(n, "transB", 1);
    gx_graph_add_node(g, "MatMul", "mm2", 2, (const char *[]){"y0", "z"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    float *x = s_fill(48), *z = s_fill(24 * 3);
    gx_view in[2] = {s_view(2, (int64_t[]){1, 48}, x), s_view(2, (int64_t[]){24, 3}, z)};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(p->n_prepared, 2);
    ck_assert_uint_eq(p->prepared_bytes, (48 * 48 + 40 * 32) * sizeof(float));
    ck_assert_str_eq(p->prepared[0].node, "mm");
    ck_assert_str_eq(p->prepared[1].node, "gemm");
    ck_assert(p->prepared[1].trans_b);
    int packed = 0; /* the MatMul heads the epilogue group; the Gemm runs alone */
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        packed += s->fused ? gx_cpu_gemm_is_packed(s->fused->head.kernel)
                           : gx_cpu_gemm_is_packed(s->kernel);
    }
    ck_assert_int_eq(packed, 2);
    char *j = gxd_plan_explain_json(p, g);
    ck_assert_ptr_nonnull(strstr(j, "\"prepared\""));
    ck_assert_ptr_nonnull(strstr(j, "W1@packed"));
    free(j);
    float *y = s_exec(p, in, 3);

    /* the reference: the BLAS, from a plan whose B is not a constant */
    gx_graph *h = gx_graph_new("ref");
    gx_graph_add_input(h, "x", GX_F32, 2, (int64_t[]){1, 48});
    gx_graph_add_input(h, "z", GX_F32, 2, (int64_t[]){24, 3});
    gx_graph_add_input(h, "W1", GX_F32, 2, (int64_t[]){48, 40});
    gx_graph_add_input(h, "W2", GX_F32, 2, (int64_t[]){24, 40});
    gxt_const(h, "b1", GX_F32, 1, (int64_t[]){40}, b1);
    gxt_const(h, "c2", GX_F32, 1, (int64_t[]){24}, c2);
    gx_graph_add_node(h, "MatMul", "mm", 2, (const char *[]){"x", "W1"}, 1, (const char *[]){"h"});
    gx_graph_add_node(h, "Add", "add", 2, (const char *[]){"h", "b1"}, 1, (const char *[]){"hb"});
    gx_graph_add_node(h, "Relu", "relu", 1, (const char *[]){"hb"}, 1, (const char *[]){"r"});
    n = gx_graph_add_node(h, "Gemm", "gemm", 3, (const char *[]){"r", "W2", "c2"}, 1,
                          (const char *[]){"y0"});
    gx_node_set_int(n, "transB", 1);
    gx_graph_add_node(h, "MatMul", "mm2", 2, (const char *[]){"y0", "z"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(h, "y");
    gx_view rin[4] = {in[0], in[1], s_view(2, (int64_t[]){48, 40}, w1),
                      s_view(2, (int64_t[]){24, 40}, w2)};
    gxd_plan *q = NULL;
    ck_assert_msg(gxd_compile(h, rin, &s_lim, &q, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(q->n_prepared, 0);
    float *r = s_exec(q, rin, 3);
    ck_assert(gxt_allclose(y, r, 3, 1e-4f, 1e-4f));
    free(y), free(r), free(x), free(z), free(w1), free(b1), free(w2), free(c2);
    gxd_plan_destroy(&p);
    gxd_plan_destroy(&q);
    gx_graph_destroy(&g);
    gx_graph_destroy(&h);
}
END_TEST

/* The integer products: x [4, 20] -> DynamicQuantizeLinear ->
 * MatMulInteger by a constant int8 W [20, 24] (and its zero point), and
 * an image u8 [1, 3, 8, 8] -> QLinearConv by a constant int8 W [5, 3, 3,
 * 3], pad 1, with a bias. The prepare pass packs both weights, the steps
 * run the packed kernels, and the plan gives the bytes of the reference
 * kernels (a plan whose weights are inputs). */
START_TEST(test_prepare_pass_integer)
{
    int8_t wm[20 * 24], wc[5 * 3 * 3 * 3];
    uint8_t img[3 * 8 * 8];
    int32_t bias[5] = {-300, 0, 7, 1000, -5};
    for (size_t i = 0; i < sizeof wm; i++)
        wm[i] = (int8_t)(i * 37 % 255 - 127);
    for (size_t i = 0; i < sizeof wc; i++)
        wc[i] = (int8_t)(i * 53 % 255 - 127);
    for (size_t i = 0; i < sizeof img; i++)
        img[i] = (uint8_t)(i * 29 % 256);
    const int8_t wzp = 3;
    const uint8_t izp = 128, yzp = 100;
    const float iscale = 0.02f, wscale = 0.004f, yscale = 0.05f;
    float *x = s_fill(4 * 20);
    int32_t *want_y = NULL;
    uint8_t *want_c = NULL;
    for (int ref = 0; ref < 2; ref++) {
        gx_graph *g = gx_graph_new(ref ? "ref" : "int");
        gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){4, 20});
        gx_graph_add_input(g, "img", GX_U8, 4, (int64_t[]){1, 3, 8, 8});
        if (ref) { /* weights as inputs: nothing to pack */
            gx_graph_add_input(g, "Wm", GX_I8, 2, (int64_t[]){20, 24});
            gx_graph_add_input(g, "Wc", GX_I8, 4, (int64_t[]){5, 3, 3, 3});
        } else {
            gxt_const(g, "Wm", GX_I8, 2, (int64_t[]){20, 24}, wm);
            gxt_const(g, "Wc", GX_I8, 4, (int64_t[]){5, 3, 3, 3}, wc);
        }
        gxt_const(g, "wzp", GX_I8, 0, NULL, &wzp);
        gxt_const(g, "izp", GX_U8, 0, NULL, &izp);
        gxt_const(g, "yzp", GX_U8, 0, NULL, &yzp);
        gxt_const(g, "is", GX_F32, 0, NULL, &iscale);
        gxt_const(g, "ws", GX_F32, 0, NULL, &wscale);
        gxt_const(g, "ys", GX_F32, 0, NULL, &yscale);
        gxt_const(g, "bias", GX_I32, 1, (int64_t[]){5}, bias);
        gx_graph_add_node(g, "DynamicQuantizeLinear", "dq", 1, (const char *[]){"x"}, 3,
                          (const char *[]){"q", "qs", "qz"});
        gx_graph_add_node(g, "MatMulInteger", "mmi", 4, (const char *[]){"q", "Wm", "qz", "wzp"},
                          1, (const char *[]){"y"});
        gx_node *n = gx_graph_add_node(
            g, "QLinearConv", "qconv", 9,
            (const char *[]){"img", "is", "izp", "Wc", "ws", "wzp", "ys", "yzp", "bias"}, 1,
            (const char *[]){"yc"});
        gx_node_set_ints(n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
        gx_graph_add_output(g, "y");
        gx_graph_add_output(g, "yc");
        gx_view in[4] = {s_view(2, (int64_t[]){4, 20}, x),
                         {.dtype = GX_U8, .ndim = 4, .shape = {1, 3, 8, 8}, .numel = 192,
                          .data = img},
                         {.dtype = GX_I8, .ndim = 2, .shape = {20, 24}, .numel = 480, .data = wm},
                         {.dtype = GX_I8, .ndim = 4, .shape = {5, 3, 3, 3}, .numel = 135,
                          .data = wc}};
        gxd_plan *p = NULL;
        char err[512];
        ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
        ck_assert_uint_eq(p->n_prepared, ref ? 0 : 2);
        for (size_t i = 0; i < p->n_steps; i++) {
            const gxd_step *s = &p->steps[i];
            if (s->op == GX_OP_MATMUL_INTEGER || s->op == GX_OP_QLINEAR_CONV)
                ck_assert((s->kernel == gx_cpu_qgemm_kernel(s->op)) == !ref);
        }
        char err2[256]; /* both outputs from one frame */
        atomic_bool cancel = false;
        gxd_exec_stop stop = {&cancel, 0};
        void *arena = gx_aligned_alloc(p->arena_bytes + 1);
        gxd_frame f;
        ck_assert_msg(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err2, sizeof err2) == GX_OK,
                      "%s", err2);
        for (size_t s = 0; s < p->n_steps; s++)
            ck_assert_int_eq(gxd_exec_step(&f, s), GX_OK);
        int32_t *y = malloc(4 * 24 * sizeof *y);
        uint8_t *yc = malloc(5 * 64);
        memcpy(y, gxd_frame_output(&f, 0)->data, 4 * 24 * sizeof *y);
        memcpy(yc, gxd_frame_output(&f, 1)->data, 5 * 64);
        gxd_frame_fini(&f);
        free(arena);
        if (ref) {
            ck_assert(!memcmp(y, want_y, 4 * 24 * sizeof(int32_t)));
            ck_assert(!memcmp(yc, want_c, 5 * 64));
            free(want_y), free(want_c), free(y), free(yc);
        } else {
            want_y = y, want_c = yc;
        }
        gxd_plan_destroy(&p);
        gx_graph_destroy(&g);
    }
    free(x);
}
END_TEST

/* A plan of a slice of the batch (a replica's) reads the whole batch's
 * packed weights instead of packing its own, and counts none. */
START_TEST(test_slices_share)
{
    gx_graph *g = gx_graph_new("share");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 24});
    float *w = s_fill(24 * 20);
    gxt_const(g, "W", GX_F32, 2, (int64_t[]){24, 20}, w);
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    float *x = s_fill(4 * 24);
    gx_view in = s_view(2, (int64_t[]){4, 24}, x), half = s_view(2, (int64_t[]){2, 24}, x);
    gxd_plan *p = NULL, *q = NULL;
    char err[512];
    bool owned = false;
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(p->n_prepared, 1);
    ck_assert(!p->prepared[0].borrowed);
    ck_assert_msg(gxd_plan_slice(p, g, &half, &s_lim, &q, &owned, err, sizeof err) == GX_OK, "%s",
                  err);
    ck_assert_uint_eq(q->n_prepared, 1);
    ck_assert(q->prepared[0].borrowed);
    ck_assert_uint_eq(q->prepared_bytes, 0);
    ck_assert_ptr_eq(q->values[q->prepared[0].value].view.data,
                     p->values[p->prepared[0].value].view.data);
    float *y = s_exec(q, &half, 2 * 20), *z = s_exec(p, &in, 4 * 20);
    ck_assert(!memcmp(y, z, 2 * 20 * sizeof *y)); /* the same bits as the whole batch's rows */
    free(y), free(z), free(x), free(w);
    if (owned)
        gxd_plan_destroy(&q);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* Plans of one graph for different input shapes share one packed copy of
 * each weight through the graph's table; a plan keeps its copy after the
 * table and the other plans are gone. */
START_TEST(test_shared_between_plans)
{
    gx_graph *g = gx_graph_new("shared");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 24});
    float *w = s_fill(24 * 20);
    gxt_const(g, "W", GX_F32, 2, (int64_t[]){24, 20}, w);
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    float *x = s_fill(6 * 24);
    gx_view in4 = s_view(2, (int64_t[]){4, 24}, x), in6 = s_view(2, (int64_t[]){6, 24}, x);
    gxd_compile_limits lim = s_lim;
    lim.shared = gxd_shared_new();
    ck_assert_ptr_nonnull(lim.shared);
    gxd_plan *p4 = NULL, *p6 = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in4, &lim, &p4, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_msg(gxd_compile(g, &in6, &lim, &p6, err, sizeof err) == GX_OK, "%s", err);
    ck_assert(p4->prepared[0].shared && p6->prepared[0].shared);
    ck_assert_uint_eq(p4->prepared_bytes, 0);
    const void *d4 = p4->values[p4->prepared[0].value].view.data;
    ck_assert_ptr_eq(d4, p6->values[p6->prepared[0].value].view.data);
    float *y6 = s_exec(p6, &in6, 6 * 20);
    gxd_shared_destroy(&lim.shared);
    gxd_plan_destroy(&p6);
    float *y4 = s_exec(p4, &in4, 4 * 20); /* its reference keeps the copy */
    ck_assert(!memcmp(y4, y6, 4 * 20 * sizeof *y4));
    free(y4), free(y6), free(x), free(w);
    gxd_plan_destroy(&p4);
    gx_graph_destroy(&g);
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("packed");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_matmul_shapes, 0, 3);
    tcase_add_test(tc, test_matmul_ranks);
    tcase_add_loop_test(tc, test_plain_rows, 0, 3);
    tcase_add_loop_test(tc, test_gemm_forms, 0, 3);
    tcase_add_test(tc, test_not_packable);
    tcase_add_test(tc, test_verify);
    tcase_add_test(tc, test_prepare_pass);
    tcase_add_test(tc, test_prepare_pass_integer);
    tcase_add_test(tc, test_slices_share);
    tcase_add_test(tc, test_shared_between_plans);
    suite_add_tcase(s, tc);
    return s;
}
