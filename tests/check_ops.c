/*
 * Op conformance: every op's schema (arity, attributes, inference, errors)
 * and CPU kernel, checked against hand-computed values and against naive
 * reference implementations in this file. Every kernel run is repeated as
 * nth = 3 shares (ith = 0..2 called in turn) and must match nth = 1.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/schema.h" /* attribute positions */
#include "tests/optest.h"
#include "tests/testutil.h"

/* ---- naive references ---- */

static void s_ref_binary(gx_op op, const gx_view *a, const gx_view *b, const gx_view *y)
{
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    int64_t idx[GX_MAX_DIMS];
    for (int64_t i = 0; i < y->numel; i++) {
        ot_unravel(i, y->ndim, y->shape, idx);
        float x = pa[ot_bcast_off(y->ndim, idx, a->ndim, a->shape)];
        float z = pb[ot_bcast_off(y->ndim, idx, b->ndim, b->shape)];
        py[i] = op == GX_OP_ADD ? x + z : op == GX_OP_SUB ? x - z : op == GX_OP_MUL ? x * z : x / z;
    }
}

static void s_ref_unary(gx_op op, const gx_view *x, const gx_view *y)
{
    const float *px = x->data;
    float *py = y->data;
    for (int64_t i = 0; i < y->numel; i++) {
        float v = px[i];
        py[i] = op == GX_OP_RELU      ? (v < 0 ? 0.0f : v)
                : op == GX_OP_SIGMOID ? (float)(1.0 / (1.0 + exp(-(double)v)))
                : op == GX_OP_TANH    ? (float)tanh((double)v)
                                      : (float)exp((double)v);
    }
}

/* numpy matmul in double */
static void s_ref_matmul(const gx_view *a, const gx_view *b, const gx_view *y)
{
    const int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1, k = a->shape[a->ndim - 1];
    const int64_t n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    const int nbd = y->ndim - (a->ndim > 1) - (b->ndim > 1);
    const int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    const int64_t nbatch = gx_shape_numel(nbd, y->shape, INT64_MAX);
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    int64_t idx[GX_MAX_DIMS];
    for (int64_t bi = 0; bi < nbatch; bi++) {
        ot_unravel(bi, nbd, y->shape, idx);
        const float *ma = pa + ot_bcast_off(nbd, idx, nba, a->shape) * m * k;
        const float *mb = pb + ot_bcast_off(nbd, idx, nbb, b->shape) * k * n;
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++)
                    s += (double)ma[i * k + l] * mb[l * n + j];
                py[(bi * m + i) * n + j] = (float)s;
            }
        }
    }
}

static void s_ref_gemm(const gx_attrval *av, int n_in, const gx_view *in, const gx_view *y)
{
    const gx_view *a = &in[0], *b = &in[1];
    const gx_view *c = n_in > 2 && in[2].ndim >= 0 ? &in[2] : NULL;
    const bool ta = av[GX_GEMM_TRANSA].i, tb = av[GX_GEMM_TRANSB].i;
    const double alpha = av[GX_GEMM_ALPHA].f, beta = av[GX_GEMM_BETA].f;
    const int64_t m = y->shape[0], n = y->shape[1], k = a->shape[ta ? 0 : 1];
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < k; l++)
                s += (double)(ta ? pa[l * m + i] : pa[i * k + l]) *
                     (tb ? pb[j * k + l] : pb[l * n + j]);
            s *= alpha;
            if (c && beta != 0)
                s += beta * ((const float *)c->data)[ot_bcast_off(2, (int64_t[]){i, j}, c->ndim,
                                                                     c->shape)];
            py[i * n + j] = (float)s;
        }
    }
}

static void s_ref_softmax(int64_t axis, const gx_view *x, const gx_view *y)
{
    int ax = (int)(axis < 0 ? axis + x->ndim : axis);
    int64_t outer = gx_shape_numel(ax, x->shape, INT64_MAX), n = x->shape[ax];
    int64_t inner = gx_shape_numel(x->ndim - ax - 1, x->shape + ax + 1, INT64_MAX);
    const float *px = x->data;
    float *py = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            const float *xr = px + o * n * inner + c;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++)
                mx = fmax(mx, xr[j * inner]);
            for (int64_t j = 0; j < n; j++)
                sum += exp(xr[j * inner] - mx);
            for (int64_t j = 0; j < n; j++)
                py[o * n * inner + c + j * inner] = (float)(exp(xr[j * inner] - mx) / sum);
        }
    }
}

static void s_ref_transpose(const gx_attrval *perm, const gx_view *x, const gx_view *y)
{
    size_t es = gx_dtype_size(x->dtype);
    int64_t oi[GX_MAX_DIMS], ii[GX_MAX_DIMS];
    for (int64_t i = 0; i < y->numel; i++) {
        ot_unravel(i, y->ndim, y->shape, oi);
        for (int d = 0; d < y->ndim; d++)
            ii[perm->set ? perm->ints[d] : y->ndim - 1 - d] = oi[d];
        int64_t src = ot_bcast_off(x->ndim, ii, x->ndim, x->shape);
        memcpy((char *)y->data + i * (int64_t)es, (const char *)x->data + src * (int64_t)es, es);
    }
}

static void s_ref_concat(int64_t axis, int n_in, const gx_view *in, const gx_view *y)
{
    int ax = (int)(axis < 0 ? axis + y->ndim : axis);
    size_t es = gx_dtype_size(y->dtype);
    int64_t idx[GX_MAX_DIMS];
    for (int64_t i = 0; i < y->numel; i++) {
        ot_unravel(i, y->ndim, y->shape, idx);
        int j = 0;
        while (idx[ax] >= in[j].shape[ax])
            idx[ax] -= in[j++].shape[ax];
        int64_t src = ot_bcast_off(y->ndim, idx, in[j].ndim, in[j].shape);
        memcpy((char *)y->data + i * (int64_t)es, (const char *)in[j].data + src * (int64_t)es,
               es);
    }
}

/* Writes the reference result of op into ref (shape and dtype set, data
 * allocated), for the ops this file covers. */
static void s_reference(gx_op op, const gx_attrval *av, int n_in, const gx_view *in,
                        const gx_view *ref)
{
    switch ((int)op) { /* not every op: no -Wswitch-enum */
    case GX_OP_ADD:
    case GX_OP_SUB:
    case GX_OP_MUL:
    case GX_OP_DIV:
        s_ref_binary(op, &in[0], &in[1], ref);
        return;
    case GX_OP_RELU:
    case GX_OP_SIGMOID:
    case GX_OP_TANH:
    case GX_OP_EXP:
        s_ref_unary(op, &in[0], ref);
        return;
    case GX_OP_MATMUL:
        s_ref_matmul(&in[0], &in[1], ref);
        return;
    case GX_OP_GEMM:
        s_ref_gemm(av, n_in, in, ref);
        return;
    case GX_OP_SOFTMAX:
        s_ref_softmax(av[GX_SOFTMAX_AXIS].i, &in[0], ref);
        return;
    case GX_OP_RESHAPE:
    case GX_OP_IDENTITY:
        memcpy(ref->data, in[0].data, (size_t)ref->numel * gx_dtype_size(ref->dtype));
        return;
    case GX_OP_TRANSPOSE:
        s_ref_transpose(&av[GX_TRANSPOSE_PERM], &in[0], ref);
        return;
    case GX_OP_CONCAT:
        s_ref_concat(av[GX_CONCAT_AXIS].i, n_in, in, ref);
        return;
    default: /* the ops added since: tested in tests/check_ops_<family>.c */
        break;
    }
    ck_abort_msg("no reference for op %d", (int)op);
}

/* Relative tolerance of op's kernel against its reference; 0: bit exact. */
static float s_rtol(gx_op op)
{
    switch ((int)op) { /* not every op: no -Wswitch-enum */
    case GX_OP_ADD:
    case GX_OP_SUB:
    case GX_OP_MUL:
    case GX_OP_DIV:
    case GX_OP_RELU:
    case GX_OP_RESHAPE:
    case GX_OP_TRANSPOSE:
    case GX_OP_CONCAT:
    case GX_OP_IDENTITY:
        return 0;
    case GX_OP_SIGMOID:
    case GX_OP_EXP:
        return 3e-7f; /* measured: at most 2.5 ulp */
    case GX_OP_TANH:
        return 5e-7f; /* the rational form (ops/cpu/vmath.h), measured over every
                       * float: 2.9e-7 with FMA, 4.1e-7 without */
    case GX_OP_MATMUL:
    case GX_OP_GEMM:
    case GX_OP_SOFTMAX:
        return 1e-5f;
    default: /* the ops added since: tested in tests/check_ops_<family>.c */
        break;
    }
    return 0;
}

static bool s_same(const gx_view *got, const gx_view *want, float rtol)
{
    size_t nbytes = (size_t)want->numel * gx_dtype_size(want->dtype);
    if (rtol > 0 && want->dtype == GX_F32)
        return ot_close(got->data, want->data, want->numel, rtol, 1e-6f);
    return memcmp(got->data, want->data, nbytes) == 0;
}

/* Runs op on in with nth = 1 and compares with the reference, then with
 * nth = 3 and 7 and compares with nth = 1, and checks that those shares
 * tile the output. Returns the nth = 1 output. */
static gx_view s_check_ref(gx_op op, const gx_node *node, int n_in, const gx_view *in)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out1, ref;
    char err[ERRLEN];
    int rc = ot_run(op, node, n_in, in, 1, av, &out1, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    ref = out1;
    ref.data = ot_alloc((size_t)out1.numel * gx_dtype_size(out1.dtype));
    s_reference(op, av, n_in, in, &ref);
    ck_assert_msg(s_same(&out1, &ref, s_rtol(op)), "%s differs from the reference", gx_op_name(op));
    for (int nth = 3; nth <= 7; nth += 4) {
        gx_view outn;
        ck_assert_int_eq(ot_run(op, node, n_in, in, nth, av, &outn, err), GX_OK);
        ck_assert_msg(s_same(&outn, &out1, 1e-6f), "%s: nth=%d differs from nth=1", gx_op_name(op),
                      nth);
        ot_check_shares(op, av, n_in, in, 1, &out1, nth);
    }
    return out1;
}

/* ---- the table ---- */

START_TEST(test_op_table)
{
    for (int i = 0; i < GX_OP_COUNT; i++) {
        gx_op op;
        ck_assert_int_eq(gx_op_lookup(gx_op_name((gx_op)i), &op), GX_OK);
        ck_assert_int_eq(op, i);
        const gx_op_schema *s = gx_op_schema_get((gx_op)i);
        ck_assert_ptr_nonnull(s);
        ck_assert_ptr_nonnull(s->infer);
        ck_assert_ptr_nonnull(s->cost);
        ck_assert(s->min_in >= 0 && s->min_in <= s->max_in && s->max_in <= GX_MAX_OP_INPUTS);
        ck_assert(s->min_out >= 0 && s->min_out <= s->max_out && s->max_out <= GX_MAX_OP_INPUTS);
        ck_assert(s->n_attrs <= GX_MAX_ATTRS && (s->n_attrs == 0 || s->attrs));
        ck_assert((gx_cpu_kernel((gx_op)i) == NULL) ==
                  ((gx_op_schema_get((gx_op)i)->flags & GX_OPF_CONTROL) != 0));
    }
    gx_op op;
    ck_assert_int_eq(gx_op_lookup("NoSuchOp", &op), GX_EOP);
    ck_assert_int_eq(gx_op_lookup("add", &op), GX_EOP);
    ck_assert_int_eq(gx_op_lookup(NULL, &op), GX_EOP);
    ck_assert_str_eq(gx_op_name(GX_OP_MATMUL), "MatMul");
    ck_assert_ptr_null(gx_op_schema_get(GX_OP_COUNT));
    ck_assert_ptr_null(gx_cpu_kernel(GX_OP_COUNT));
    ck_assert(gx_op_schema_get(GX_OP_ADD)->flags & GX_OPF_ELEMENTWISE);
    ck_assert(gx_op_schema_get(GX_OP_CONCAT)->flags & GX_OPF_SHAPE_ONLY);
}
END_TEST

START_TEST(test_resolve_attrs)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    /* defaults */
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_GEMM, NODE(), av, err, sizeof err), GX_OK);
    ck_assert(!av[0].set && av[0].f == 1.0 && av[1].f == 1.0 && av[2].i == 0 && av[3].i == 0);
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_SOFTMAX, NULL, av, err, sizeof err), GX_OK);
    ck_assert_int_eq(av[0].i, -1);
    /* values, INT accepted for FLOAT */
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_GEMM,
                                         NODE(A_INT("alpha", 3), A_FLOAT("beta", 0.5),
                                              A_INT("transB", 1)),
                                         av, err, sizeof err),
                     GX_OK);
    ck_assert(av[0].set && av[0].f == 3.0 && av[1].f == 0.5 && !av[2].set && av[3].i == 1);
    const gx_node *perm = NODE(A_INTS("perm", 1, 0)); /* av borrows from it */
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_TRANSPOSE, perm, av, err, sizeof err), GX_OK);
    ck_assert(av[0].set && av[0].n == 2 && av[0].ints[0] == 1);
    /* unknown, wrong type, FLOAT not accepted for INT, missing, twice */
    ck_assert_int_eq(
        gx_op_resolve_attrs(GX_OP_GEMM, NODE(A_FLOAT("gamma", 1)), av, err, sizeof err), GX_EATTR);
    ck_assert_str_eq(err, "Gemm: unknown attribute 'gamma'");
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_RELU, NODE(A_INT("axis", 1)), av, err, sizeof err),
                     GX_EATTR);
    ck_assert_str_eq(err, "Relu: unknown attribute 'axis'");
    ck_assert_int_eq(
        gx_op_resolve_attrs(GX_OP_GEMM, NODE(A_FLOAT("transA", 1)), av, err, sizeof err), GX_EATTR);
    ck_assert_str_eq(err, "Gemm: attribute 'transA' is float, expected int");
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_TRANSPOSE, NODE(A_INT("perm", 1)), av, err,
                                         sizeof err),
                     GX_EATTR);
    ck_assert_str_eq(err, "Transpose: attribute 'perm' is int, expected ints");
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_CONCAT, NODE(), av, err, sizeof err), GX_EATTR);
    ck_assert_str_eq(err, "Concat: attribute 'axis' is required");
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_CONCAT, NODE(A_INT("axis", 0), A_INT("axis", 1)), av,
                                         err, sizeof err),
                     GX_EATTR);
    ck_assert_str_eq(err, "Concat: attribute 'axis' given twice");
    /* through ot_run: an unknown attribute stops before inference */
    gx_view in[2] = {RANDV(2), RANDV(2)};
    ot_expect_error(GX_OP_ADD, NODE(A_INT("broadcast", 1)), 2, in, GX_EATTR,
                   "Add: unknown attribute 'broadcast'");
}
END_TEST

START_TEST(test_broadcast_shape)
{
    int n;
    int64_t out[GX_MAX_DIMS];
    ck_assert(gx_broadcast_shape(SHAPE(2, 3), SHAPE(3), &n, out));
    ot_check_shape(&(gx_view){.ndim = n, .shape = {out[0], out[1]}}, SHAPE(2, 3));
    ck_assert(gx_broadcast_shape(SHAPE(2, 1, 4), SHAPE(3, 1), &n, out));
    ck_assert(n == 3 && out[0] == 2 && out[1] == 3 && out[2] == 4);
    ck_assert(gx_broadcast_shape(0, NULL, SHAPE(5, 1), &n, out));
    ck_assert(n == 2 && out[0] == 5 && out[1] == 1);
    ck_assert(gx_broadcast_shape(SHAPE(0, 1), SHAPE(1, 3), &n, out));
    ck_assert(n == 2 && out[0] == 0 && out[1] == 3);
    ck_assert(gx_broadcast_shape(0, NULL, 0, NULL, &n, out) && n == 0);
    ck_assert(!gx_broadcast_shape(SHAPE(2, 3), SHAPE(4), &n, out));
    ck_assert(!gx_broadcast_shape(SHAPE(2, 3), SHAPE(3, 3), &n, out));
    ck_assert(!gx_broadcast_shape(SHAPE(0), SHAPE(2), &n, out));
}
END_TEST

/* ---- elementwise ---- */

START_TEST(test_binary_hand)
{
    gx_view in[2] = {F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6), F32V(SHAPE(3), 10, 20, 30)};
    ot_expect(GX_OP_ADD, NULL, 2, in, F32V(SHAPE(2, 3), 11, 22, 33, 14, 25, 36), 0, 0);
    ot_expect(GX_OP_SUB, NULL, 2, in, F32V(SHAPE(2, 3), -9, -18, -27, -6, -15, -24), 0, 0);
    gx_view col[2] = {F32V(SHAPE(2, 1), 2, -1), F32V(SHAPE(3), 1, 2, 3)};
    ot_expect(GX_OP_MUL, NULL, 2, col, F32V(SHAPE(2, 3), 2, 4, 6, -1, -2, -3), 0, 0);
    gx_view sc[2] = {F32V(SHAPE(2, 2), 1, 2, 3, 4),
                     ot_view(GX_F32, ot_copy(&(float){2}, 4), 0, NULL)};
    ot_expect(GX_OP_DIV, NULL, 2, sc, F32V(SHAPE(2, 2), 0.5, 1, 1.5, 2), 0, 0);
    gx_view sc2[2] = {sc[1], sc[0]};
    ot_expect(GX_OP_DIV, NULL, 2, sc2, F32V(SHAPE(2, 2), 2, 1, 2.0f / 3, 0.5), 0, 0);
    gx_view zero[2] = {F32V(SHAPE(2), 1, -1), F32V(SHAPE(1), 0)};
    ot_expect(GX_OP_DIV, NULL, 2, zero, F32V(SHAPE(2), INFINITY, -INFINITY), 0, 0);
}
END_TEST

START_TEST(test_binary_broadcast)
{
    static const int64_t pairs[][2][5] = {
        /* {ndim, dims...} of A and B */
        {{2, 2, 3}, {2, 2, 3}}, {{2, 2, 3}, {1, 3}},       {{3, 2, 1, 4}, {2, 3, 1}},
        {{0}, {2, 2, 3}},       {{2, 2, 3}, {0}},          {{1, 1}, {1, 5}},
        {{2, 4, 1}, {2, 1, 5}}, {{3, 2, 3, 4}, {3, 2, 1, 4}}, {{3, 3, 1, 5}, {3, 1, 4, 1}},
        {{2, 0, 3}, {1, 3}},    {{0}, {0}},                {{4, 2, 1, 3, 1}, {3, 5, 1, 7}},
        {{1, 33}, {2, 5, 33}},  {{2, 17, 1}, {1, 19}},
    };
    const gx_op ops[] = {GX_OP_ADD, GX_OP_SUB, GX_OP_MUL, GX_OP_DIV};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        gx_view in[2];
        for (int i = 0; i < 2; i++)
            in[i] = ot_rand(GX_F32, (int)pairs[p][i][0], &pairs[p][i][1]);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            s_check_ref(ops[o], NULL, 2, in);
    }
}
END_TEST

START_TEST(test_unary_hand)
{
    gx_view x = F32V(SHAPE(6), -2, -0.5, 0, 0.5, 3, NAN);
    ot_expect(GX_OP_RELU, NULL, 1, &x, F32V(SHAPE(6), 0, 0, 0, 0.5, 3, NAN), 0, 0);
    gx_view e = F32V(SHAPE(5), 0, 1, -1, 200, -200);
    ot_expect(GX_OP_EXP, NULL, 1, &e, F32V(SHAPE(5), 1, 2.718281828f, 0.367879441f, INFINITY, 0),
             1e-6f, 0);
    ot_expect(GX_OP_SIGMOID, NULL, 1, &e, F32V(SHAPE(5), 0.5, 0.731058579f, 0.268941421f, 1, 0),
             1e-6f, 0);
    ot_expect(GX_OP_TANH, NULL, 1, &e, F32V(SHAPE(5), 0, 0.761594156f, -0.761594156f, 1, -1), 1e-6f,
             0);
}
END_TEST

/* The vectorised exp / sigmoid / tanh against libm over their whole range,
 * special values included. */
START_TEST(test_unary_vs_libm)
{
    const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f,
                             -1e-4f, 0.6249f, 0.625f, 0.6251f, -0.625f, 9.0f, 10.0f, -9.5f,
                             88.7f, 88.8f, -87.3f, -87.4f, -103.0f, 1e10f, -1e10f};
    const int64_t n = 40000, ns = sizeof special / sizeof special[0];
    gx_view x = ot_view(GX_F32, ot_alloc((size_t)(n + ns) * sizeof(float)), SHAPE(n + ns));
    float *px = x.data;
    for (int64_t i = 0; i < n; i++)
        px[i] = -100.0f + 200.0f * (float)i / (float)n;
    memcpy(px + n, special, sizeof special);
    const gx_op ops[] = {GX_OP_RELU, GX_OP_EXP, GX_OP_SIGMOID, GX_OP_TANH};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view y, ref;
        char err[ERRLEN];
        ck_assert_int_eq(ot_run(ops[o], NULL, 1, &x, 3, av, &y, err), GX_OK);
        ref = y;
        ref.data = ot_alloc((size_t)y.numel * sizeof(float));
        s_reference(ops[o], av, 1, &x, &ref);
        /* atol covers exp's subnormal results, which the kernel flushes to 0 */
        ck_assert_msg(ot_close(y.data, ref.data, y.numel, s_rtol(ops[o]), 1.2e-38f), "%s",
                      gx_op_name(ops[o]));
    }
}
END_TEST

/* ---- MatMul ---- */

START_TEST(test_matmul_hand)
{
    gx_view in[2] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(2, 2), 5, 6, 7, 8)};
    ot_expect(GX_OP_MATMUL, NULL, 2, in, F32V(SHAPE(2, 2), 19, 22, 43, 50), 0, 0);
    gx_view vv[2] = {F32V(SHAPE(3), 1, 2, 3), F32V(SHAPE(3), 4, 5, 6)};
    ot_expect(GX_OP_MATMUL, NULL, 2, vv, ot_view(GX_F32, ot_copy(&(float){32}, 4), 0, NULL), 0, 0);
    gx_view mv[2] = {F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6), F32V(SHAPE(3), 1, 0, -1)};
    ot_expect(GX_OP_MATMUL, NULL, 2, mv, F32V(SHAPE(2), -2, -2), 0, 0);
    gx_view vm[2] = {F32V(SHAPE(2), 1, -1), F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6)};
    ot_expect(GX_OP_MATMUL, NULL, 2, vm, F32V(SHAPE(3), -3, -3, -3), 0, 0);
    /* K == 0: zeros */
    gx_view k0[2] = {ot_view(GX_F32, ot_alloc(4), SHAPE(2, 0)),
                     ot_view(GX_F32, ot_alloc(4), SHAPE(0, 3))};
    ot_expect(GX_OP_MATMUL, NULL, 2, k0, F32V(SHAPE(2, 3), 0, 0, 0, 0, 0, 0), 0, 0);
}
END_TEST

START_TEST(test_matmul_shapes)
{
    static const int64_t cases[][2][6] = {
        {{2, 2, 3}, {2, 3, 4}},       {{1, 3}, {1, 3}},          {{1, 3}, {2, 3, 4}},
        {{2, 5, 3}, {1, 3}},          {{3, 2, 3, 4}, {2, 4, 5}}, {{4, 2, 1, 3, 4}, {3, 5, 4, 2}},
        {{1, 4}, {3, 2, 4, 3}},       {{3, 2, 3, 4}, {1, 4}},    {{3, 1, 3, 4}, {3, 2, 4, 5}},
        {{3, 2, 3, 4}, {3, 2, 4, 5}}, {{3, 2, 3, 4}, {3, 1, 4, 5}}, {{2, 0, 4}, {2, 4, 5}},
        {{3, 2, 0, 4}, {2, 4, 5}},    {{2, 7, 33}, {2, 33, 9}},  {{5, 2, 1, 3, 1, 4}, {3, 3, 4, 6}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gx_view in[2];
        for (int i = 0; i < 2; i++)
            in[i] = ot_rand(GX_F32, (int)cases[c][i][0], &cases[c][i][1]);
        s_check_ref(GX_OP_MATMUL, NULL, 2, in);
    }
    /* output shapes of the 1-D and broadcast cases */
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y;
    char err[ERRLEN];
    gx_view a[2] = {RANDV(4), RANDV(3, 2, 4, 3)};
    ck_assert_int_eq(ot_run(GX_OP_MATMUL, NULL, 2, a, 1, av, &y, err), GX_OK);
    ot_check_shape(&y, SHAPE(3, 2, 3));
    gx_view b[2] = {RANDV(2, 1, 3, 4), RANDV(5, 4, 2)};
    ck_assert_int_eq(ot_run(GX_OP_MATMUL, NULL, 2, b, 1, av, &y, err), GX_OK);
    ot_check_shape(&y, SHAPE(2, 5, 3, 2));
}
END_TEST

/* ---- Gemm ---- */

START_TEST(test_gemm_hand)
{
    /* [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]] */
    gx_view in[3] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(2, 2), 5, 6, 7, 8),
                     F32V(SHAPE(2), 100, 200)};
    ot_expect(GX_OP_GEMM, NULL, 2, in, F32V(SHAPE(2, 2), 19, 22, 43, 50), 0, 0);
    ot_expect(GX_OP_GEMM, NULL, 3, in, F32V(SHAPE(2, 2), 119, 222, 143, 250), 0, 0);
    /* A^T = [[1,3],[2,4]]: [[26,30],[38,44]]; alpha 2, beta -1 */
    ot_expect(GX_OP_GEMM, NODE(A_INT("transA", 1), A_FLOAT("alpha", 2), A_FLOAT("beta", -1)), 3, in,
             F32V(SHAPE(2, 2), -48, -140, -24, -112), 0, 0);
    /* B^T = [[5,7],[6,8]]: [[17,23],[39,53]] */
    ot_expect(GX_OP_GEMM, NODE(A_INT("transB", 1)), 2, in, F32V(SHAPE(2, 2), 17, 23, 39, 53), 0, 0);
    /* beta = 0: C is not read, so a NaN in it does not show */
    gx_view nan_c[3] = {in[0], in[1], F32V(SHAPE(1), NAN)};
    ot_expect(GX_OP_GEMM, NODE(A_FLOAT("beta", 0)), 3, nan_c, F32V(SHAPE(2, 2), 19, 22, 43, 50), 0,
             0);
    /* an omitted C (ndim -1) */
    gx_view omitted[3] = {in[0], in[1], {.ndim = -1}};
    ot_expect(GX_OP_GEMM, NULL, 3, omitted, F32V(SHAPE(2, 2), 19, 22, 43, 50), 0, 0);
}
END_TEST

START_TEST(test_gemm_all)
{
    const int64_t m = 5, k = 7, n = 6;
    /* C as [N], [1,N], [M,1], scalar, [1], [M,N], [1,1] */
    static const int64_t cshapes[][3] = {{1, 6}, {2, 1, 6}, {2, 5, 1}, {0},
                                         {1, 1}, {2, 5, 6}, {2, 1, 1}};
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            gx_view in[3];
            in[0] = ta ? RANDV(k, m) : RANDV(m, k);
            in[1] = tb ? RANDV(n, k) : RANDV(k, n);
            const gx_node *node = NODE(A_INT("transA", ta), A_INT("transB", tb),
                                       A_FLOAT("alpha", 0.5), A_FLOAT("beta", 2));
            s_check_ref(GX_OP_GEMM, node, 2, in);
            s_check_ref(GX_OP_GEMM, NODE(A_INT("transA", ta), A_INT("transB", tb)), 2, in);
            for (size_t c = 0; c < sizeof cshapes / sizeof cshapes[0]; c++) {
                in[2] = ot_rand(GX_F32, (int)cshapes[c][0], &cshapes[c][1]);
                gx_view y = s_check_ref(GX_OP_GEMM, node, 3, in);
                ot_check_shape(&y, SHAPE(m, n));
            }
        }
    }
}
END_TEST

/* ---- Softmax ---- */

START_TEST(test_softmax)
{
    /* softmax([0,1,2]) = [0.09003057, 0.24472847, 0.66524096], also shifted
     * by 1000 (stability: exp(1002) overflows float) */
    const float w0 = 0.09003057f, w1 = 0.24472847f, w2 = 0.66524096f;
    gx_view x = F32V(SHAPE(2, 3), 0, 1, 2, 1000, 1001, 1002);
    ot_expect(GX_OP_SOFTMAX, NULL, 1, &x, F32V(SHAPE(2, 3), w0, w1, w2, w0, w1, w2), 1e-6f, 0);
    ot_expect(GX_OP_SOFTMAX, NODE(A_INT("axis", 1)), 1, &x,
             F32V(SHAPE(2, 3), w0, w1, w2, w0, w1, w2), 1e-6f, 0);
    /* axis 0: each column is (v, v + 1000) */
    ot_expect(GX_OP_SOFTMAX, NODE(A_INT("axis", 0)), 1, &x, F32V(SHAPE(2, 3), 0, 0, 0, 1, 1, 1), 0,
             1e-30f);
    gx_view big = F32V(SHAPE(3, 1), -3e38f, 3e38f, 0);
    ot_expect(GX_OP_SOFTMAX, NODE(A_INT("axis", 0)), 1, &big, F32V(SHAPE(3, 1), 0, 1, 0), 0, 0);

    static const int64_t shapes[][5] = {{2, 4, 7}, {3, 2, 3, 4}, {2, 3, 300}, {2, 300, 3},
                                        {1, 1},    {3, 1, 5, 1}, {2, 0, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gx_view r = ot_rand(GX_F32, (int)shapes[s][0], &shapes[s][1]);
        for (int64_t i = 0; i < r.numel; i++)
            ((float *)r.data)[i] *= 50.0f; /* spread: exp of the raw values would overflow */
        for (int64_t axis = -r.ndim; axis < r.ndim; axis++)
            s_check_ref(GX_OP_SOFTMAX, NODE(A_INT("axis", axis)), 1, &r);
    }
}
END_TEST

/* ---- shape ops ---- */

START_TEST(test_transpose)
{
    gx_view x = F32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ot_expect(GX_OP_TRANSPOSE, NULL, 1, &x, F32V(SHAPE(3, 2), 1, 4, 2, 5, 3, 6), 0, 0);
    ot_expect(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 1)), 1, &x, x, 0, 0);
    gx_view x3 = F32V(SHAPE(2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7);
    ot_expect(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 1, 2, 0)), 1, &x3,
             F32V(SHAPE(2, 2, 2), 0, 4, 1, 5, 2, 6, 3, 7), 0, 0);

    static const int64_t perms3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    gx_view r3 = RANDV(3, 5, 7);
    for (int p = 0; p < 6; p++) {
        const int64_t *q = perms3[p];
        s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", q[0], q[1], q[2])), 1, &r3);
    }
    gx_view r4 = RANDV(2, 3, 4, 5);
    s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 2, 3, 1)), 1, &r4);
    s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 3, 1, 0, 2)), 1, &r4);
    s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 1, 0, 2, 3)), 1, &r4);
    s_check_ref(GX_OP_TRANSPOSE, NULL, 1, &r4);
    gx_view r5 = RANDV(2, 1, 3, 1, 4);
    s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 4, 3, 0, 2, 1)), 1, &r5);
    /* any dtype: every element size */
    const gx_dtype dts[] = {GX_U8, GX_F16, GX_I32, GX_I64, GX_BOOL};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        gx_view t = ot_rand(dts[d], SHAPE(4, 3, 5));
        s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 2, 0, 1)), 1, &t);
        s_check_ref(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 2, 1)), 1, &t);
    }
    gx_view empty = RANDV(0, 3);
    s_check_ref(GX_OP_TRANSPOSE, NULL, 1, &empty);
    gx_view scalar = ot_view(GX_F32, ot_copy(&(float){7}, 4), 0, NULL);
    ot_expect(GX_OP_TRANSPOSE, NULL, 1, &scalar, scalar, 0, 0);
}
END_TEST

START_TEST(test_concat)
{
    gx_view in[2] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(1, 2), 5, 6)};
    ot_expect(GX_OP_CONCAT, NODE(A_INT("axis", 0)), 2, in, F32V(SHAPE(3, 2), 1, 2, 3, 4, 5, 6), 0,
             0);
    gx_view col[2] = {F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(2, 1), 5, 6)};
    ot_expect(GX_OP_CONCAT, NODE(A_INT("axis", -1)), 2, col, F32V(SHAPE(2, 3), 1, 2, 5, 3, 4, 6), 0,
             0);
    ot_expect(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 1, col, col[0], 0, 0);

    gx_view r[4] = {RANDV(3, 2, 5), RANDV(3, 7, 5), RANDV(3, 1, 5), RANDV(3, 0, 5)};
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 4, r);
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", -2)), 3, r);
    gx_view r0[3] = {RANDV(2, 4, 5), RANDV(5, 4, 5), RANDV(1, 4, 5)};
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", 0)), 3, r0);
    gx_view r2[3] = {RANDV(2, 3, 1), RANDV(2, 3, 17), RANDV(2, 3, 4)};
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", 2)), 3, r2);
    gx_view i64[2] = {ot_rand(GX_I64, SHAPE(3, 2)), ot_rand(GX_I64, SHAPE(3, 9))};
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 2, i64);
    gx_view u8[3] = {ot_rand(GX_U8, SHAPE(5, 3)), ot_rand(GX_U8, SHAPE(5, 1)),
                     ot_rand(GX_U8, SHAPE(5, 70))};
    s_check_ref(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 3, u8);
}
END_TEST

static gx_view s_i64(int n, const int64_t *v)
{
    return ot_view(GX_I64, ot_copy(v, (size_t)n * sizeof *v), SHAPE(n));
}

/* Reshape [2,3,4] by target, expecting the shape want (data unchanged). */
static void s_reshape_ok(const gx_node *node, int n, const int64_t *target, int ndim,
                         const int64_t *want)
{
    gx_view in[2] = {RANDV(2, 3, 4), s_i64(n, target)};
    gx_view y = s_check_ref(GX_OP_RESHAPE, node, 2, in);
    ot_check_shape(&y, ndim, want);
}

START_TEST(test_reshape)
{
    s_reshape_ok(NULL, SHAPE(0, -1), SHAPE(2, 12));
    s_reshape_ok(NULL, SHAPE(-1), SHAPE(24));
    s_reshape_ok(NULL, SHAPE(4, 0, 2), SHAPE(4, 3, 2));
    s_reshape_ok(NULL, SHAPE(0, 0, 0), SHAPE(2, 3, 4));
    s_reshape_ok(NULL, SHAPE(-1, 2, 1, 3), SHAPE(4, 2, 1, 3));
    s_reshape_ok(NODE(A_INT("allowzero", 1)), SHAPE(6, 4), SHAPE(6, 4));
    /* allowzero: a 0 is a 0 */
    gx_view empty[2] = {RANDV(0, 4), s_i64(SHAPE(4, 0))};
    gx_view y = s_check_ref(GX_OP_RESHAPE, NODE(A_INT("allowzero", 1)), 2, empty);
    ot_check_shape(&y, SHAPE(4, 0));
    /* to and from a scalar */
    gx_view one[2] = {RANDV(1, 1), ot_view(GX_I64, ot_alloc(8), SHAPE(0))};
    y = s_check_ref(GX_OP_RESHAPE, NULL, 2, one);
    ck_assert_int_eq(y.ndim, 0);
    /* any dtype */
    gx_view b[2] = {ot_rand(GX_BOOL, SHAPE(3, 4)), s_i64(SHAPE(2, -1))};
    y = s_check_ref(GX_OP_RESHAPE, NULL, 2, b);
    ot_check_shape(&y, SHAPE(2, 6));
    ck_assert_int_eq(y.dtype, GX_BOOL);
}
END_TEST

START_TEST(test_identity)
{
    gx_view x = F32V(SHAPE(3), 1, -2, 3);
    ot_expect(GX_OP_IDENTITY, NULL, 1, &x, x, 0, 0);
    gx_view i = ot_rand(GX_I32, SHAPE(5, 3));
    s_check_ref(GX_OP_IDENTITY, NULL, 1, &i);
}
END_TEST

/* ---- inference errors ---- */

START_TEST(test_errors)
{
    gx_view a23 = RANDV(2, 3), a4 = RANDV(4), a45 = RANDV(4, 5);
    gx_view f64 = ot_rand(GX_F64, SHAPE(2, 2)), i64 = ot_rand(GX_I64, SHAPE(2, 3));

    ot_expect_error(GX_OP_ADD, NULL, 2, (gx_view[]){a23, a4}, GX_ESHAPE,
                   "Add: shapes [2,3] and [4] are not broadcastable");
    ot_expect_error(GX_OP_DIV, NULL, 2, (gx_view[]){RANDV(2, 3, 4), RANDV(2, 1)}, GX_ESHAPE,
                   "Div: shapes [2,3,4] and [2,1] are not broadcastable");
    ot_expect_error(GX_OP_MUL, NULL, 2, (gx_view[]){a23, i64}, GX_EDTYPE,
                   "Mul: input 1 is int64 but input 0 is float32");
    ot_expect_error(GX_OP_EXP, NULL, 1, &i64, GX_EDTYPE,
                   "Exp: int64 not supported (float32, float16, bfloat16, float64)");
    ot_expect_error(GX_OP_SUB, NULL, 2, (gx_view[]){a23, {.ndim = -1}}, GX_ESHAPE,
                   "Sub: input 1 is required");

    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){a23, f64}, GX_EDTYPE,
                   "MatMul: B is float64 but A is float32");
    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){a23, a45}, GX_ESHAPE,
                   "MatMul: A is [2,3] but B is [4,5] (K mismatch)");
    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){a4, RANDV(3)}, GX_ESHAPE,
                   "MatMul: A is [4] but B is [3] (K mismatch)");
    ot_expect_error(GX_OP_MATMUL, NULL, 2, (gx_view[]){RANDV(2, 2, 3), RANDV(3, 3, 4)}, GX_ESHAPE,
                   "MatMul: batch dims of A [2,2,3] and B [3,3,4] are not broadcastable");
    ot_expect_error(GX_OP_MATMUL, NULL, 2,
                   (gx_view[]){ot_view(GX_F32, ot_alloc(4), 0, NULL), a4}, GX_ESHAPE,
                   "MatMul: A is [] and B is [4]; both need rank >= 1");

    ot_expect_error(GX_OP_GEMM, NULL, 2, (gx_view[]){a23, a45}, GX_ESHAPE,
                   "Gemm: A is [2,3] but B is [4,5] (K mismatch)");
    ot_expect_error(GX_OP_GEMM, NODE(A_INT("transA", 1)), 2, (gx_view[]){a23, a45}, GX_ESHAPE,
                   "Gemm: A is [2,3] but B is [4,5] (K mismatch with transA=1)");
    ot_expect_error(GX_OP_GEMM, NULL, 2, (gx_view[]){RANDV(2, 3, 4), a45}, GX_ESHAPE,
                   "Gemm: A is [2,3,4] and B is [4,5]; both must be 2-D");
    ot_expect_error(GX_OP_GEMM, NULL, 3, (gx_view[]){a23, RANDV(3, 5), RANDV(3)}, GX_ESHAPE,
                   "Gemm: C is [3], not unidirectionally broadcastable to [M,N] = [2,5]");
    ot_expect_error(GX_OP_GEMM, NULL, 3, (gx_view[]){a23, RANDV(3, 5), RANDV(1, 2, 5)}, GX_ESHAPE,
                   "Gemm: C is [1,2,5], not unidirectionally broadcastable to [M,N] = [2,5]");
    ot_expect_error(GX_OP_GEMM, NULL, 3,
                   (gx_view[]){a23, RANDV(3, 5), ot_rand(GX_I64, SHAPE(5))}, GX_EDTYPE,
                   "Gemm: C is int64 but A is float32");

    ot_expect_error(GX_OP_SOFTMAX, NODE(A_INT("axis", 2)), 1, &a23, GX_EATTR,
                   "Softmax: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_SOFTMAX, NODE(A_INT("axis", -3)), 1, &a23, GX_EATTR,
                   "Softmax: axis -3 is out of range for rank 2");
    ot_expect_error(GX_OP_SOFTMAX, NULL, 1, &i64, GX_EDTYPE,
                   "Softmax: int64 not supported (float32 only)");

    ot_expect_error(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 0)), 1, &a23, GX_EATTR,
                   "Transpose: perm [0,0] is not a permutation of 0..1");
    ot_expect_error(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 2)), 1, &a23, GX_EATTR,
                   "Transpose: perm [0,2] is not a permutation of 0..1");
    ot_expect_error(GX_OP_TRANSPOSE, NODE(A_INTS("perm", -1, 0)), 1, &a23, GX_EATTR,
                   "Transpose: perm [-1,0] is not a permutation of 0..1");
    ot_expect_error(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 1, 0, 2)), 1, &a23, GX_EATTR,
                   "Transpose: perm [1,0,2] has 3 entries but the input [2,3] has rank 2");

    ot_expect_error(GX_OP_CONCAT, NODE(A_INT("axis", 0)), 2, (gx_view[]){a23, a45}, GX_ESHAPE,
                   "Concat: input 1 is [4,5] but input 0 is [2,3]; all dims but axis 0 must match");
    ot_expect_error(GX_OP_CONCAT, NODE(A_INT("axis", 1)), 2, (gx_view[]){a23, RANDV(2, 3, 1)},
                   GX_ESHAPE,
                   "Concat: input 1 is [2,3,1] but input 0 is [2,3]; all dims but axis 1 must "
                   "match");
    ot_expect_error(GX_OP_CONCAT, NODE(A_INT("axis", 0)), 2, (gx_view[]){a23, i64}, GX_EDTYPE,
                   "Concat: input 1 is int64 but input 0 is float32");
    ot_expect_error(GX_OP_CONCAT, NODE(A_INT("axis", 2)), 1, &a23, GX_EATTR,
                   "Concat: axis 2 is out of range for rank 2");

    gx_view x = RANDV(2, 3, 4);
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, ot_rand(GX_I32, SHAPE(2))}, GX_EDTYPE,
                   "Reshape: shape input is int32, expected int64");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, s_i64(SHAPE(-1, -1))}, GX_ESHAPE,
                   "Reshape: shape [-1,-1] has more than one -1");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, s_i64(SHAPE(5, -1))}, GX_ESHAPE,
                   "Reshape: cannot reshape [2,3,4] (24 elements) into [5,-1]");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, s_i64(SHAPE(5, 5))}, GX_ESHAPE,
                   "Reshape: cannot reshape [2,3,4] (24 elements) into [5,5]");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, s_i64(SHAPE(2, -3, 4))}, GX_ESHAPE,
                   "Reshape: shape [2,-3,4] has invalid dim -3");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2, (gx_view[]){x, s_i64(SHAPE(2, 3, 4, 0))}, GX_ESHAPE,
                   "Reshape: shape [2,3,4,0] copies dim 3 (0) but the input [2,3,4] has rank 3");
    ot_expect_error(GX_OP_RESHAPE, NODE(A_INT("allowzero", 1)), 2,
                   (gx_view[]){RANDV(0, 4), s_i64(SHAPE(0, -1))}, GX_ESHAPE,
                   "Reshape: shape [0,-1] has both 0 and -1 with allowzero=1");
    ot_expect_error(GX_OP_RESHAPE, NULL, 2,
                   (gx_view[]){x, s_i64(SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 24))}, GX_ESHAPE,
                   "Reshape: target has 9 dims (max 8)");
}
END_TEST

/* ---- every kernel split across threads ---- */

/* One case per op this file covers (the family suites split the others),
 * sized so shares end mid-row and mid-run; nth = 3 and 7 must give what
 * nth = 1 gives (s_check_ref), which is the reference. */
static void s_thread_case(gx_op op)
{
    switch ((int)op) { /* not every op: no -Wswitch-enum */
    case GX_OP_ADD:
    case GX_OP_SUB:
    case GX_OP_MUL:
    case GX_OP_DIV:
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(3, 37, 41), RANDV(41)});
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(5, 1, 7), RANDV(1, 9, 1)});
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(1001), RANDV(1001)});
        return;
    case GX_OP_RELU:
    case GX_OP_SIGMOID:
    case GX_OP_TANH:
    case GX_OP_EXP:
        s_check_ref(op, NULL, 1, (gx_view[]){RANDV(13, 77)});
        return;
    case GX_OP_MATMUL:
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(3, 5, 16), RANDV(16, 9)});
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(2, 1, 2, 16), RANDV(3, 16, 9)});
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(16), RANDV(16, 9)});
        return;
    case GX_OP_GEMM:
        s_check_ref(op, NODE(A_INT("transA", 1), A_FLOAT("beta", 0.25)), 3,
                    (gx_view[]){RANDV(12, 11), RANDV(12, 10), RANDV(11, 1)});
        return;
    case GX_OP_SOFTMAX:
        s_check_ref(op, NULL, 1, (gx_view[]){RANDV(11, 29)});
        s_check_ref(op, NODE(A_INT("axis", 0)), 1, (gx_view[]){RANDV(11, 29)});
        s_check_ref(op, NODE(A_INT("axis", 1)), 1, (gx_view[]){RANDV(3, 5, 7)});
        return;
    case GX_OP_RESHAPE:
        s_check_ref(op, NULL, 2, (gx_view[]){RANDV(7, 45), s_i64(SHAPE(-1, 5))});
        return;
    case GX_OP_TRANSPOSE:
        s_check_ref(op, NODE(A_INTS("perm", 2, 0, 1)), 1, (gx_view[]){RANDV(7, 9, 11)});
        s_check_ref(op, NULL, 1, (gx_view[]){ot_rand(GX_U8, SHAPE(31, 33))});
        return;
    case GX_OP_CONCAT:
        s_check_ref(op, NODE(A_INT("axis", 0)), 2, (gx_view[]){RANDV(7, 13), RANDV(5, 13)});
        s_check_ref(op, NODE(A_INT("axis", 1)), 3,
                    (gx_view[]){RANDV(7, 13), RANDV(7, 2), RANDV(7, 30)});
        return;
    case GX_OP_IDENTITY:
        s_check_ref(op, NULL, 1, (gx_view[]){ot_rand(GX_I8, SHAPE(1001))});
        return;
    default: /* the ops added since: tested in tests/check_ops_<family>.c */
        break;
    }
}

START_TEST(test_threads)
{
    for (int op = 0; op < GX_OP_COUNT; op++)
        s_thread_case((gx_op)op);
}
END_TEST

Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("schema");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_op_table);
    tcase_add_test(tc, test_resolve_attrs);
    tcase_add_test(tc, test_broadcast_shape);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_binary_hand);
    tcase_add_test(tc, test_binary_broadcast);
    tcase_add_test(tc, test_unary_hand);
    tcase_add_test(tc, test_unary_vs_libm);
    tcase_add_test(tc, test_matmul_hand);
    tcase_add_test(tc, test_matmul_shapes);
    tcase_add_test(tc, test_gemm_hand);
    tcase_add_test(tc, test_gemm_all);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_transpose);
    tcase_add_test(tc, test_concat);
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_identity);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);
    return s;
}
