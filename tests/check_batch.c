/*
 * Seed 002's replica split: the per-op batch rules (gx_op_batch_separable),
 * the compiler pass that judges whole plans (p->batch, sync_steps,
 * batch_why), and the property that makes the rules worth trusting: a plan
 * said to split gives, run slice by slice through plans of its own, the
 * very bytes the whole batch gives.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "core/internal.h"
#include "tests/optest.h"
#include "tests/testutil.h"

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

#define VIEWS(...)                                                            \
    (int)(sizeof((gx_view[]){__VA_ARGS__}) / sizeof(gx_view)), (gx_view[]) { __VA_ARGS__ }
/* A scalar of the given C type and dtype. */
#define SCALAR(dt, T, v) ot_view(dt, ot_copy((T[]){v}, sizeof(T)), 0, NULL)
#define NAMES(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                   (const char *[]) { __VA_ARGS__ }
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
/* A view with a shape and no data, as a graph input looks to the compiler. */
#define V(...) ot_view(GX_F32, NULL, SHAPE(__VA_ARGS__))
#define OMITTED ((gx_view){.ndim = -1})

/* The answer of s_sep when the op mixes samples. */
#define MIXES (-1)
/* A rule's answer (s_sep) against the expected one, with a short message. */
#define WANT(got, want)                                                       \
    do {                                                                      \
        int got_ = (got), want_ = (want);                                     \
        ck_assert_msg(got_ == want_, "the rule says %d, expected %d (-1: mixes)", got_, want_); \
    } while (0)

/* Resolves node's attributes for op, infers its n_out outputs from in[]
 * (which must succeed), then asks gx_op_batch_separable with input i
 * batched when bit i of `batched` is set. Returns MIXES, or the mask of
 * batched outputs (0: separable, no output depends on the batch). */
static int s_sep(gx_op op, const gx_node *node, int n_in, const gx_view *in, unsigned batched,
                 int n_out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN] = "";
    ck_assert_msg(gx_op_resolve_attrs(op, node, av, err, sizeof err) == GX_OK, "%s", err);
    gx_view out[4];
    memset(out, 0, sizeof out);
    ck_assert_int_le(n_out, 4);
    gx_infer ic = {av, n_in, in, n_out, out, err, sizeof err};
    int rc = gx_op_schema_get(op)->infer(&ic);
    ck_assert_msg(rc == GX_OK, "%s: infer: %s", gx_op_name(op), err);
    bool in_b[GX_MAX_OP_INPUTS], out_b[4];
    for (int i = 0; i < n_in; i++)
        in_b[i] = (batched >> i) & 1;
    memset(out_b, 1, sizeof out_b); /* the rule must clear what it does not set */
    gx_batch_ctx bc = {av, n_in, in, in_b, n_out, out, out_b};
    if (!gx_op_batch_separable(op, &bc)) {
        for (int k = 0; k < n_out; k++)
            ck_assert_msg(!out_b[k], "%s: mixes but marks output %d batched", gx_op_name(op), k);
        return MIXES;
    }
    int mask = 0;
    for (int k = 0; k < n_out; k++)
        mask |= out_b[k] << k;
    return mask;
}

/* ---- the rules, op by op ---- */

START_TEST(test_unbatched_inputs)
{
    /* nothing batched: always separable, nothing batched out, even where
     * the op would mix (Softmax over axis 0, training BatchNormalization) */
    WANT(s_sep(GX_OP_SOFTMAX, NODE(A_INT("axis", 0)), VIEWS(V(32, 10)), 0, 1), 0);
    WANT(s_sep(GX_OP_MVN, NODE(), VIEWS(V(4, 3, 2, 2)), 0, 1), 0);
    /* a coupled op stays coupled even over axes that would not need it */
    WANT(s_sep(GX_OP_MVN, NODE(A_INTS("axes", 2, 3)), VIEWS(V(4, 3, 2, 2)), 1, 1),
                     MIXES);
}
END_TEST

START_TEST(test_elementwise)
{
    WANT(s_sep(GX_OP_RELU, NODE(), VIEWS(V(32, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_ADD, NODE(), VIEWS(V(32, 4), V(4)), 1, 1), 1);
    WANT(s_sep(GX_OP_ADD, NODE(), VIEWS(V(32, 4), V(1, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_ADD, NODE(), VIEWS(V(32, 4), V(32, 4)), 3, 1), 1);
    WANT(s_sep(GX_OP_ADD, NODE(), VIEWS(V(4), V(32, 4)), 2, 1), 1);
    /* an unbatched [32, 4] adds its own row i to sample i */
    WANT(s_sep(GX_OP_ADD, NODE(), VIEWS(V(32, 4), V(32, 4)), 1, 1), MIXES);
    /* the batched input's axis 0 is not the output's */
    WANT(s_sep(GX_OP_MUL, NODE(), VIEWS(V(32, 4), V(3, 1, 1)), 1, 1), MIXES);
    WANT(
        s_sep(GX_OP_WHERE, NODE(), VIEWS(ot_view(GX_BOOL, NULL, SHAPE(32, 4)), V(4), V(32, 4)), 5,
              1),
        1);
    WANT(s_sep(GX_OP_CAST, NODE(A_INT("to", 7)), VIEWS(V(32, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_CAST_LIKE, NODE(), VIEWS(V(32, 4), V(2)), 1, 1), 1);
    /* CastLike reads only input 1's dtype */
    WANT(s_sep(GX_OP_CAST_LIKE, NODE(), VIEWS(V(2), V(32, 4)), 2, 1), 0);
}
END_TEST

START_TEST(test_softmax_and_norms)
{
    WANT(s_sep(GX_OP_SOFTMAX, NODE(), VIEWS(V(32, 10)), 1, 1), 1);
    WANT(s_sep(GX_OP_SOFTMAX, NODE(A_INT("axis", 1)), VIEWS(V(32, 10)), 1, 1), 1);
    WANT(s_sep(GX_OP_SOFTMAX, NODE(A_INT("axis", 0)), VIEWS(V(32, 10)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_LOGSOFTMAX, NODE(A_INT("axis", -2)), VIEWS(V(32, 10)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_HARDMAX, NODE(A_INT("axis", -1)), VIEWS(V(32, 10)), 1, 1), 1);
    /* rank 1: the default axis -1 is the batch's */
    WANT(s_sep(GX_OP_SOFTMAX, NODE(), VIEWS(V(32)), 1, 1), MIXES);

    gx_view bn[] = {V(8, 3, 4, 4), V(3), V(3), V(3), V(3)};
    WANT(s_sep(GX_OP_BATCHNORM, NODE(), 5, bn, 1, 1), 1);
    WANT(s_sep(GX_OP_BATCHNORM, NODE(A_INT("training_mode", 1)), 5, bn, 1, 1), MIXES);
    WANT(s_sep(GX_OP_BATCHNORM, NODE(A_INT("training_mode", 1)), 5, bn, 1, 3), MIXES);
    WANT(s_sep(GX_OP_INSTANCENORM, NODE(), VIEWS(V(8, 3, 4, 4), V(3), V(3)), 1, 1), 1);
    WANT(s_sep(GX_OP_LRN, NODE(A_INT("size", 3)), VIEWS(V(8, 3, 4, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_LAYERNORM, NODE(), VIEWS(V(8, 5, 6), V(6), V(6)), 1, 3), 7);
    WANT(s_sep(GX_OP_LAYERNORM, NODE(A_INT("axis", 1)), VIEWS(V(8, 5, 6), V(5, 6)), 1,
                           1),
                     1);
    WANT(s_sep(GX_OP_LAYERNORM, NODE(A_INT("axis", 0)),
                           VIEWS(V(8, 5, 6), V(8, 5, 6)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_LAYERNORM, NODE(A_INT("axis", -3)),
                           VIEWS(V(8, 5, 6), V(8, 5, 6)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_DROPOUT, NODE(), VIEWS(V(8, 5)), 1, 2), 3);
}
END_TEST

START_TEST(test_conv_and_pools)
{
    gx_view x = V(8, 3, 6, 6);
    WANT(s_sep(GX_OP_CONV, NODE(), VIEWS(x, V(4, 3, 3, 3), V(4)), 1, 1), 1);
    /* batched weights: each sample would need its own filters */
    WANT(s_sep(GX_OP_CONV, NODE(), VIEWS(x, V(8, 3, 3, 3)), 3, 1), MIXES);
    WANT(s_sep(GX_OP_CONVTRANSPOSE, NODE(), VIEWS(x, V(3, 2, 3, 3)), 1, 1), 1);
    WANT(s_sep(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), VIEWS(x), 1, 1), 1);
    /* the indices count from the whole batch's first element */
    WANT(s_sep(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), VIEWS(x), 1, 2),
                     MIXES);
    WANT(s_sep(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2, 2)), VIEWS(x), 1, 1),
                     1);
    WANT(s_sep(GX_OP_LPPOOL, NODE(A_INTS("kernel_shape", 2, 2)), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_GLOBALAVERAGEPOOL, NODE(), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_GLOBALMAXPOOL, NODE(), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_GLOBALLPPOOL, NODE(), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 2)), VIEWS(V(8, 4, 3, 3)),
                           1, 1),
                     1);
}
END_TEST

START_TEST(test_matmul_gemm)
{
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 8), V(8, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 8), V(8)), 1, 1), 1);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 3, 8), V(8, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 3, 8), V(1, 8, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 3, 8), V(32, 8, 4)), 3, 1), 1);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(3, 8), V(32, 8, 4)), 2, 1), 1);
    /* an unbatched [32, 8, 4]: sample i meets its own matrix */
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 3, 8), V(32, 8, 4)), 1, 1), MIXES);
    /* B's rows are the batch: the product sums over samples */
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(4, 32), V(32, 5)), 2, 1), MIXES);
    WANT(s_sep(GX_OP_MATMUL, NODE(), VIEWS(V(32, 32), V(32, 5)), 3, 1), MIXES);

    WANT(s_sep(GX_OP_GEMM, NODE(), VIEWS(V(32, 8), V(8, 4), V(4)), 1, 1), 1);
    WANT(s_sep(GX_OP_GEMM, NODE(), VIEWS(V(32, 8), V(8, 4), V(1, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_GEMM, NODE(A_INT("transB", 1)), VIEWS(V(32, 8), V(4, 8)), 1, 1),
                     1);
    /* C [M, N] adds a different row to each sample; C [M, 1] too */
    WANT(s_sep(GX_OP_GEMM, NODE(), VIEWS(V(32, 8), V(8, 4), V(32, 4)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_GEMM, NODE(), VIEWS(V(32, 8), V(8, 4), V(32, 1)), 1, 1), MIXES);
    /* transA: the batch is A's columns, which the product sums over */
    WANT(s_sep(GX_OP_GEMM, NODE(A_INT("transA", 1)), VIEWS(V(32, 8), V(32, 4)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_GEMM, NODE(), VIEWS(V(4, 32), V(32, 8)), 2, 1), MIXES);
}
END_TEST

/* A byte view with a shape and no data. */
#define U8V(...) ot_view(GX_U8, NULL, SHAPE(__VA_ARGS__))

START_TEST(test_quantized_matmuls)
{
    const gx_view zp = SCALAR(GX_U8, uint8_t, 3), sc = SCALAR(GX_F32, float, 0.5f);
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(32, 8), U8V(8, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(32, 8), U8V(8, 4), zp, U8V(4)), 1, 1),
         1);
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(32, 3, 8), U8V(8, 4), zp), 1, 1), 1);
    /* a zero point per row of A, whose rows are the samples */
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(32, 8), U8V(8, 4), U8V(32)), 1, 1),
         MIXES);
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(32, 8), U8V(8, 4), U8V(32)), 5, 1),
         MIXES);
    WANT(s_sep(GX_OP_MATMUL_INTEGER, NODE(), VIEWS(U8V(4, 32), U8V(32, 5)), 2, 1), MIXES);

    WANT(s_sep(GX_OP_QLINEAR_MATMUL, NODE(), VIEWS(U8V(32, 8), sc, zp, U8V(8, 4), sc, zp, sc, zp),
               1, 1),
         1);
    WANT(s_sep(GX_OP_QLINEAR_MATMUL, NODE(),
               VIEWS(U8V(32, 3, 8), sc, zp, U8V(32, 8, 4), sc, zp, sc, zp), 9, 1),
         1);
    /* b's rows are the batch; a batched output scale */
    WANT(s_sep(GX_OP_QLINEAR_MATMUL, NODE(), VIEWS(U8V(4, 32), sc, zp, U8V(32, 8), sc, zp, sc, zp),
               8, 1),
         MIXES);
    WANT(s_sep(GX_OP_QLINEAR_MATMUL, NODE(), VIEWS(U8V(32, 8), sc, zp, U8V(8, 4), sc, zp, sc, zp),
               1 | 64, 1),
         MIXES);
}
END_TEST

START_TEST(test_reduce)
{
    gx_view x = V(8, 5, 6);
    WANT(s_sep(GX_OP_REDUCE_SUM, NODE(), VIEWS(x, I64V(SHAPE(1), 1)), 1, 1), 1);
    WANT(s_sep(GX_OP_REDUCE_SUM, NODE(A_INT("keepdims", 0)),
                           VIEWS(x, I64V(SHAPE(2), -1, 1)), 1, 1),
                     1);
    WANT(s_sep(GX_OP_REDUCE_SUM, NODE(), VIEWS(x, I64V(SHAPE(1), 0)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_REDUCE_SUM, NODE(), VIEWS(x, I64V(SHAPE(1), -3)), 1, 1), MIXES);
    /* no axes: everything, the batch included */
    WANT(s_sep(GX_OP_REDUCE_MEAN, NODE(), VIEWS(x), 1, 1), MIXES);
    /* ... unless noop_with_empty_axes */
    WANT(s_sep(GX_OP_REDUCE_MEAN, NODE(A_INT("noop_with_empty_axes", 1)), VIEWS(x), 1,
                           1),
                     1);
    WANT(s_sep(GX_OP_REDUCE_MAX, NODE(A_INTS("axes", 1, 2)), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_REDUCE_MIN, NODE(A_INTS("axes", 0)), VIEWS(x), 1, 1), MIXES);
    /* axes known only at run time: not provable */
    gx_view axes = ot_view(GX_I64, NULL, SHAPE(1));
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_REDUCE_SUM, NODE(), av, err, sizeof err), GX_OK);
    gx_view out = V(8, 5, 1);
    bool in_b[2] = {true, false}, out_b[1];
    gx_batch_ctx bc = {av, 2, (gx_view[]){x, axes}, in_b, 1, &out, out_b};
    ck_assert(!gx_op_batch_separable(GX_OP_REDUCE_SUM, &bc));

    WANT(s_sep(GX_OP_ARGMAX, NODE(A_INT("axis", 1)), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_ARGMAX, NODE(), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_ARGMIN, NODE(A_INT("axis", -3)), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_ARGMIN, NODE(A_INT("axis", -1), A_INT("keepdims", 0)), VIEWS(x), 1,
                           1),
                     1);
}
END_TEST

START_TEST(test_reshape_family)
{
    gx_view x = V(32, 4, 5);
    /* a literal batch size does not shrink with the slice */
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), 32, -1)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), 0, -1)), 1, 1), 1);
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(3), 0, 2, 10)), 1, 1), 1);
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), -1, 20)), 1, 1), 1);
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(3), -1, 0, 5)), 1, 1), 1);
    /* -1 that takes in part of a sample: axis 0 is no longer the batch */
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), -1, 5)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), 64, 10)), 1, 1), MIXES);
    /* the shape itself batched */
    WANT(s_sep(GX_OP_RESHAPE, NODE(), VIEWS(x, I64V(SHAPE(2), 0, -1)), 3, 1), MIXES);

    WANT(s_sep(GX_OP_FLATTEN, NODE(), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_FLATTEN, NODE(A_INT("axis", -2)), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_FLATTEN, NODE(A_INT("axis", 0)), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_FLATTEN, NODE(A_INT("axis", 2)), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_FLATTEN, NODE(A_INT("axis", 2)), VIEWS(V(32, 1, 5)), 1, 1), 1);

    WANT(s_sep(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 2, 1)), VIEWS(x), 1, 1), 1);
    WANT(s_sep(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 1, 0, 2)), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_TRANSPOSE, NODE(), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_TRANSPOSE, NODE(), VIEWS(V(32)), 1, 1), 1);

    gx_view y = V(32, 1, 5);
    WANT(s_sep(GX_OP_SQUEEZE, NODE(), VIEWS(y, I64V(SHAPE(1), 1)), 1, 1), 1);
    WANT(s_sep(GX_OP_SQUEEZE, NODE(A_INTS("axes", -2)), VIEWS(y), 1, 1), 1);
    /* without axes a slice of one sample would lose axis 0 too */
    WANT(s_sep(GX_OP_SQUEEZE, NODE(), VIEWS(y), 1, 1), MIXES);
    WANT(s_sep(GX_OP_UNSQUEEZE, NODE(), VIEWS(x, I64V(SHAPE(1), 1)), 1, 1), 1);
    WANT(s_sep(GX_OP_UNSQUEEZE, NODE(), VIEWS(x, I64V(SHAPE(1), -1)), 1, 1), 1);
    WANT(s_sep(GX_OP_UNSQUEEZE, NODE(), VIEWS(x, I64V(SHAPE(1), 0)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_UNSQUEEZE, NODE(), VIEWS(x, I64V(SHAPE(1), -4)), 1, 1), MIXES);
    WANT(s_sep(GX_OP_IDENTITY, NODE(), VIEWS(x), 1, 1), 1);
}
END_TEST

START_TEST(test_concat_split_slice)
{
    gx_view x = V(32, 4, 5);
    WANT(s_sep(GX_OP_CONCAT, NODE(A_INT("axis", 1)), VIEWS(x, V(32, 2, 5)), 3, 1), 1);
    WANT(s_sep(GX_OP_CONCAT, NODE(A_INT("axis", -1)), VIEWS(x, x), 3, 1), 1);
    /* an unbatched part would put its own row i beside sample i */
    WANT(s_sep(GX_OP_CONCAT, NODE(A_INT("axis", 1)), VIEWS(x, V(32, 2, 5)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_CONCAT, NODE(A_INT("axis", 0)), VIEWS(x, x), 3, 1), MIXES);
    WANT(s_sep(GX_OP_CONCAT, NODE(A_INT("axis", -3)), VIEWS(x, x), 3, 1), MIXES);

    WANT(s_sep(GX_OP_SPLIT, NODE(A_INT("axis", 1)), VIEWS(x), 1, 2), 3);
    WANT(s_sep(GX_OP_SPLIT, NODE(A_INT("axis", 2)), VIEWS(x, I64V(SHAPE(2), 1, 4)), 1,
                           2),
                     3);
    WANT(s_sep(GX_OP_SPLIT, NODE(), VIEWS(x), 1, 2), MIXES);

    const int64_t big = INT64_MAX;
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(1), 1), I64V(SHAPE(1), 3), I64V(SHAPE(1), 1)), 1,
                           1),
                     1);
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(2), 0, 1), I64V(SHAPE(2), big, -1)), 1, 1),
                     1);
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(1), -32), I64V(SHAPE(1), 32), I64V(SHAPE(1), 0)),
                           1, 1),
                     1);
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(1), 0), I64V(SHAPE(1), 16), I64V(SHAPE(1), 0)), 1,
                           1),
                     MIXES);
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(1), 1), I64V(SHAPE(1), big), I64V(SHAPE(1), 0)),
                           1, 1),
                     MIXES);
    /* reversed along the batch */
    WANT(s_sep(GX_OP_SLICE, NODE(),
                           VIEWS(x, I64V(SHAPE(1), -1), I64V(SHAPE(1), -big), I64V(SHAPE(1), 0),
                                 I64V(SHAPE(1), -1)),
                           1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_SLICE, NODE(A_INTS("starts", 1), A_INTS("ends", 2),
                                             A_INTS("axes", 2)),
                           VIEWS(x), 1, 1),
                     1);

    WANT(s_sep(GX_OP_PAD, NODE(), VIEWS(V(32, 4), I64V(SHAPE(4), 0, 1, 0, 2)), 1, 1),
                     1);
    WANT(s_sep(GX_OP_PAD, NODE(), VIEWS(V(32, 4), I64V(SHAPE(4), 1, 0, 0, 0)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_PAD, NODE(),
                           VIEWS(V(32, 4), I64V(SHAPE(2), 1, 1), OMITTED, I64V(SHAPE(1), 1)), 1,
                           1),
                     1);
    WANT(s_sep(GX_OP_PAD, NODE(),
                           VIEWS(V(32, 4), I64V(SHAPE(2), 0, -1), OMITTED, I64V(SHAPE(1), 0)), 1,
                           1),
                     MIXES);
}
END_TEST

START_TEST(test_gather_expand_tile_shape)
{
    gx_view x = V(32, 10);
    WANT(s_sep(GX_OP_GATHER, NODE(A_INT("axis", 1)), VIEWS(x, I64V(SHAPE(2), 0, 3)), 1,
                           1),
                     1);
    WANT(s_sep(GX_OP_GATHER, NODE(), VIEWS(x, I64V(SHAPE(2), 0, 3)), 1, 1), MIXES);
    /* an embedding: a table looked up by batched token ids */
    gx_view ids = ot_view(GX_I64, NULL, SHAPE(32, 7));
    WANT(s_sep(GX_OP_GATHER, NODE(), VIEWS(V(100, 16), ids), 2, 1), 1);
    WANT(s_sep(GX_OP_GATHER, NODE(A_INT("axis", 1)), VIEWS(V(16, 100), ids), 2, 1),
                     MIXES);
    WANT(s_sep(GX_OP_GATHER, NODE(A_INT("axis", 1)), VIEWS(V(32, 100), ids), 3, 1),
                     MIXES);

    WANT(s_sep(GX_OP_EXPAND, NODE(), VIEWS(V(32, 1), I64V(SHAPE(1), 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_EXPAND, NODE(), VIEWS(V(32, 1), I64V(SHAPE(2), 1, 4)), 1, 1), 1);
    WANT(s_sep(GX_OP_EXPAND, NODE(), VIEWS(V(32, 1), I64V(SHAPE(2), 32, 4)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_EXPAND, NODE(), VIEWS(V(32, 1), I64V(SHAPE(3), 2, 1, 4)), 1, 1),
                     MIXES);
    WANT(s_sep(GX_OP_TILE, NODE(), VIEWS(V(32, 2), I64V(SHAPE(2), 1, 3)), 1, 1), 1);
    WANT(s_sep(GX_OP_TILE, NODE(), VIEWS(V(32, 2), I64V(SHAPE(2), 2, 1)), 1, 1), MIXES);

    /* Shape from dim 1 on is the same for any slice; dim 0 is the batch size */
    WANT(s_sep(GX_OP_SHAPE, NODE(A_INT("start", 1)), VIEWS(x), 1, 1), 0);
    WANT(s_sep(GX_OP_SHAPE, NODE(A_INT("start", -1)), VIEWS(x), 1, 1), 0);
    WANT(s_sep(GX_OP_SHAPE, NODE(), VIEWS(x), 1, 1), MIXES);
    WANT(s_sep(GX_OP_SIZE, NODE(), VIEWS(x), 1, 1), MIXES);

    WANT(s_sep(GX_OP_QUANTIZE_LINEAR, NODE(), VIEWS(x, SCALAR(GX_F32, float, 0.5f)), 1, 1), 1);
    WANT(s_sep(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("axis", 1)), VIEWS(x, RANDV(10)), 1,
                           1),
                     1);
    /* one scale per sample */
    WANT(s_sep(GX_OP_QUANTIZE_LINEAR, NODE(A_INT("axis", 0)), VIEWS(x, RANDV(32)), 1,
                           1),
                     MIXES);
    WANT(s_sep(GX_OP_QUANTIZE_LINEAR, NODE(), VIEWS(x, RANDV(1)), 1, 1), 1);
    /* no rule at all: taken to mix */
    WANT(s_sep(GX_OP_CUMSUM, NODE(), VIEWS(x, SCALAR(GX_I64, int64_t, 1)), 1, 1), MIXES);
}
END_TEST

/* ---- plans ---- */

/* Declares input name with axis 0 symbolic, so one graph compiles for any
 * batch size. */
static void s_input(gx_graph *g, const char *name, gx_dtype dt, int ndim, const int64_t *shape)
{
    int64_t s[GX_MAX_DIMS];
    memcpy(s, shape, (size_t)ndim * sizeof *s);
    s[0] = -1;
    ck_assert_int_eq(gx_graph_add_input(g, name, dt, ndim, s), GX_OK);
}

/* A float32 constant of pseudo-random values. */
static void s_weight(gx_graph *g, const char *name, int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    ck_assert_ptr_nonnull(t);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = ot_randf();
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* A float32 constant of positive values (variances). */
static void s_positive(gx_graph *g, const char *name, int64_t n)
{
    gx_tensor *t = gx_tensor_new(GX_F32, 1, (int64_t[]){n});
    ck_assert_ptr_nonnull(t);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        d[i] = 0.5f + (float)i / 4;
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

static void s_ints(gx_graph *g, const char *name, int64_t n, const int64_t *v)
{
    gx_tensor *t = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){n}, v, (size_t)n * sizeof *v);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

static gx_node *s_node(gx_graph *g, const char *op, const char *name, size_t n_in,
                       const char *const *in, size_t n_out, const char *const *out)
{
    gx_node *n = gx_graph_add_node(g, op, name, n_in, in, n_out, out);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* x [B, 16] -> MatMul -> Add -> Relu -> Gemm -> Softmax -> y [B, 4] */
static gx_graph *s_mlp(void)
{
    gx_graph *g = gx_graph_new("mlp");
    s_input(g, "x", GX_F32, 2, (int64_t[]){1, 16});
    s_weight(g, "w1", 2, (int64_t[]){16, 8});
    s_weight(g, "b1", 1, (int64_t[]){8});
    s_weight(g, "w2", 2, (int64_t[]){8, 4});
    s_weight(g, "b2", 1, (int64_t[]){4});
    s_node(g, "MatMul", "mm1", NAMES("x", "w1"), NAMES("h0"));
    s_node(g, "Add", "add1", NAMES("h0", "b1"), NAMES("h1"));
    s_node(g, "Relu", "relu1", NAMES("h1"), NAMES("h2"));
    s_node(g, "Gemm", "fc2", NAMES("h2", "w2", "b2"), NAMES("h3"));
    s_node(g, "Softmax", "sm", NAMES("h3"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* x [B, 3, 8, 8] -> Conv -> BatchNormalization -> Relu -> MaxPool ->
 * ConvTranspose -> Flatten -> Gemm -> y [B, 5]; training_mode on the
 * BatchNormalization. */
static gx_graph *s_cnn(int64_t training)
{
    gx_graph *g = gx_graph_new("cnn");
    s_input(g, "x", GX_F32, 4, (int64_t[]){1, 3, 8, 8});
    s_weight(g, "w", 4, (int64_t[]){4, 3, 3, 3});
    s_weight(g, "wb", 1, (int64_t[]){4});
    s_weight(g, "scale", 1, (int64_t[]){4});
    s_weight(g, "bias", 1, (int64_t[]){4});
    s_weight(g, "mean", 1, (int64_t[]){4});
    s_positive(g, "var", 4);
    s_weight(g, "tw", 4, (int64_t[]){4, 2, 3, 3});
    s_weight(g, "fw", 2, (int64_t[]){72, 5});
    s_weight(g, "fb", 1, (int64_t[]){5});
    gx_node *n = s_node(g, "Conv", "conv1", NAMES("x", "w", "wb"), NAMES("c"));
    ck_assert_int_eq(gx_node_set_ints(n, "pads", (int64_t[]){1, 1, 1, 1}, 4), GX_OK);
    n = s_node(g, "BatchNormalization", "bn1", NAMES("c", "scale", "bias", "mean", "var"),
               NAMES("n"));
    ck_assert_int_eq(gx_node_set_int(n, "training_mode", training), GX_OK);
    s_node(g, "Relu", "relu", NAMES("n"), NAMES("r"));
    n = s_node(g, "MaxPool", "pool", NAMES("r"), NAMES("p"));
    ck_assert_int_eq(gx_node_set_ints(n, "kernel_shape", (int64_t[]){2, 2}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(n, "strides", (int64_t[]){2, 2}, 2), GX_OK);
    s_node(g, "ConvTranspose", "up", NAMES("p", "tw"), NAMES("u"));
    s_node(g, "Flatten", "flat", NAMES("u"), NAMES("f"));
    s_node(g, "Gemm", "fc", NAMES("f", "fw", "fb"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

/* An attention block on token ids: Gather (embedding), LayerNormalization,
 * MatMul, Reshape [0, 5, 2, 4], Transpose, MatMul of two batched operands,
 * Softmax, ReduceMean over the heads, Flatten, Slice and Concat; a second
 * output is an ArgMax (int64). */
static gx_graph *s_attention(void)
{
    gx_graph *g = gx_graph_new("attention");
    s_input(g, "tok", GX_I64, 2, (int64_t[]){1, 5});
    s_weight(g, "table", 2, (int64_t[]){20, 8});
    s_weight(g, "ln_s", 1, (int64_t[]){8});
    s_weight(g, "ln_b", 1, (int64_t[]){8});
    s_weight(g, "wq", 2, (int64_t[]){8, 8});
    s_ints(g, "heads", 4, (int64_t[]){0, 5, 2, 4});
    s_ints(g, "s_start", 1, (int64_t[]){2});
    s_ints(g, "s_end", 1, (int64_t[]){12});
    s_ints(g, "s_axes", 1, (int64_t[]){1});
    s_node(g, "Gather", "embed", NAMES("table", "tok"), NAMES("e"));
    gx_node *n = s_node(g, "LayerNormalization", "ln", NAMES("e", "ln_s", "ln_b"), NAMES("nrm"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", -1), GX_OK);
    s_node(g, "MatMul", "q", NAMES("nrm", "wq"), NAMES("q"));
    s_node(g, "Reshape", "split_heads", NAMES("q", "heads"), NAMES("h"));
    n = s_node(g, "Transpose", "t", NAMES("h"), NAMES("t"));
    ck_assert_int_eq(gx_node_set_ints(n, "perm", (int64_t[]){0, 2, 1, 3}, 4), GX_OK);
    n = s_node(g, "Transpose", "kt", NAMES("h"), NAMES("kt"));
    ck_assert_int_eq(gx_node_set_ints(n, "perm", (int64_t[]){0, 2, 3, 1}, 4), GX_OK);
    s_node(g, "MatMul", "scores", NAMES("t", "kt"), NAMES("s"));
    s_node(g, "Softmax", "attn", NAMES("s"), NAMES("a"));
    s_node(g, "MatMul", "ctx", NAMES("a", "t"), NAMES("o"));
    n = s_node(g, "ReduceMean", "mean_heads", NAMES("o"), NAMES("m"));
    ck_assert_int_eq(gx_node_set_ints(n, "axes", (int64_t[]){1}, 1), GX_OK);
    ck_assert_int_eq(gx_node_set_int(n, "keepdims", 0), GX_OK);
    s_node(g, "Flatten", "flat", NAMES("m"), NAMES("f"));
    s_node(g, "Slice", "cut", NAMES("f", "s_start", "s_end", "s_axes"), NAMES("c"));
    n = s_node(g, "Concat", "cat", NAMES("c", "f"), NAMES("y"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", 1), GX_OK);
    n = s_node(g, "ArgMax", "best", NAMES("f"), NAMES("idx"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", 1), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "idx"), GX_OK);
    return g;
}

/* x [B, 3, 8, 8] -> InstanceNormalization -> LRN -> AveragePool -> Pad ->
 * Split along channels; one part through GlobalAveragePool, the other
 * Tile'd, then added (broadcast). No BLAS on the way (see s_check_split). */
static gx_graph *s_image(void)
{
    gx_graph *g = gx_graph_new("image");
    s_input(g, "x", GX_F32, 4, (int64_t[]){1, 3, 8, 8});
    s_weight(g, "in_s", 1, (int64_t[]){3});
    s_weight(g, "in_b", 1, (int64_t[]){3});
    s_ints(g, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
    s_ints(g, "parts", 2, (int64_t[]){1, 2});
    s_ints(g, "reps", 4, (int64_t[]){1, 2, 1, 1});
    s_node(g, "InstanceNormalization", "inorm", NAMES("x", "in_s", "in_b"), NAMES("i"));
    gx_node *n = s_node(g, "LRN", "lrn", NAMES("i"), NAMES("l"));
    ck_assert_int_eq(gx_node_set_int(n, "size", 3), GX_OK);
    n = s_node(g, "AveragePool", "avg", NAMES("l"), NAMES("a"));
    ck_assert_int_eq(gx_node_set_ints(n, "kernel_shape", (int64_t[]){2, 2}, 2), GX_OK);
    ck_assert_int_eq(gx_node_set_ints(n, "strides", (int64_t[]){2, 2}, 2), GX_OK);
    s_node(g, "Pad", "pad", NAMES("a", "pads"), NAMES("p"));
    n = s_node(g, "Split", "split", NAMES("p", "parts"), NAMES("s1", "s2"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", 1), GX_OK);
    s_node(g, "GlobalAveragePool", "gap", NAMES("s2"), NAMES("gp"));
    s_node(g, "Tile", "tile", NAMES("s1", "reps"), NAMES("tl"));
    s_node(g, "Add", "sum", NAMES("tl", "gp"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    return g;
}

static gx_view s_shape_view(gx_dtype dt, int ndim, const int64_t *shape, int64_t batch)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    v.shape[0] = batch;
    v.numel = gx_shape_numel(ndim, v.shape, INT64_MAX);
    return v;
}

static gxd_plan *s_compile(const gx_graph *g, const gx_view *in)
{
    gxd_plan *p = NULL;
    char err[512] = "";
    ck_assert_msg(gxd_compile(g, in, &s_lim, &p, err, sizeof err) == GX_OK, "compile: %s", err);
    return p;
}

START_TEST(test_plan_mlp)
{
    gx_graph *g = s_mlp();
    gx_view x = s_shape_view(GX_F32, SHAPE(1, 16), 32);
    gxd_plan *p = s_compile(g, &x);
    ck_assert_msg(p->batch == 32, "batch %lld: %s", (long long)p->batch, p->batch_why);
    ck_assert_uint_eq(p->sync_steps, 0);
    ck_assert_str_eq(p->batch_why,
                     "32 samples along axis 0 of 1 input; every step keeps them apart");
    gxd_plan_destroy(&p);
    /* one sample: nothing to split */
    x = s_shape_view(GX_F32, SHAPE(1, 16), 1);
    p = s_compile(g, &x);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_str_eq(p->batch_why, "a batch of 1 (axis 0 of 'x') cannot be split");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_plan_cnn)
{
    gx_graph *g = s_cnn(0);
    gx_view x = s_shape_view(GX_F32, SHAPE(1, 3, 8, 8), 16);
    gxd_plan *p = s_compile(g, &x);
    ck_assert_msg(p->batch == 16, "batch %lld: %s", (long long)p->batch, p->batch_why);
    ck_assert_uint_eq(p->sync_steps, 0);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    g = s_cnn(1);
    p = s_compile(g, &x);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 1);
    ck_assert_str_eq(p->batch_why, "node 'bn1' (BatchNormalization) mixes samples");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_plan_reasons)
{
    char err[256];
    /* two inputs that disagree on axis 0 */
    gx_graph *g = gx_graph_new("two");
    s_input(g, "a", GX_F32, 2, (int64_t[]){1, 4});
    s_input(g, "b", GX_F32, 2, (int64_t[]){1, 4});
    gx_node *n = s_node(g, "Concat", "cat", NAMES("a", "b"), NAMES("y"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", 0), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_view in[2] = {s_shape_view(GX_F32, SHAPE(1, 4), 32), s_shape_view(GX_F32, SHAPE(1, 4), 8)};
    gxd_plan *p = NULL;
    ck_assert_int_eq(gxd_compile(g, in, &s_lim, &p, err, sizeof err), GX_OK);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_str_eq(p->batch_why, "inputs 'a' and 'b' disagree on axis 0 (32 vs 8)");
    gxd_plan_destroy(&p);
    /* the same sizes: the Concat along axis 0 mixes (sample i of the output
     * is not sample i of either input) */
    in[1] = in[0];
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 1);
    ck_assert_str_eq(p->batch_why, "node 'cat' (Concat) mixes samples");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    /* a reduction over the batch, then a softmax over it: two sync steps,
     * the first named */
    g = gx_graph_new("sync2");
    s_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    n = s_node(g, "Softmax", "sm0", NAMES("x"), NAMES("s"));
    gx_node_set_int(n, "axis", 0);
    n = s_node(g, "ReduceSum", "rs", NAMES("s"), NAMES("y"));
    gx_node_set_ints(n, "axes", (int64_t[]){0}, 1);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    in[0] = s_shape_view(GX_F32, SHAPE(1, 4), 6);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 2);
    ck_assert_str_eq(p->batch_why, "node 'sm0' (Softmax) mixes samples");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    /* an output that does not depend on the batch */
    g = gx_graph_new("const_out");
    s_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    s_weight(g, "w", 1, (int64_t[]){4});
    s_node(g, "Relu", "r", NAMES("x"), NAMES("y"));
    s_node(g, "Neg", "neg", NAMES("w"), NAMES("z"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "z"), GX_OK);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 0);
    ck_assert_str_eq(p->batch_why, "output 'z' does not carry the batch");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    /* the batch size read as a number (Shape, folded) */
    g = gx_graph_new("shape");
    s_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    s_node(g, "Shape", "shp", NAMES("x"), NAMES("s"));
    s_node(g, "Reshape", "rs", NAMES("x", "s"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 1); /* the Reshape to a literal [6, 4] */
    ck_assert_str_eq(p->batch_why, "node 'shp' (Shape) reads the batch size");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    /* a step whose shapes are known only at run time */
    g = gx_graph_new("dynamic");
    s_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    s_node(g, "NonZero", "nz", NAMES("x"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    in[0] = s_shape_view(GX_F32, SHAPE(1, 4), 6);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_uint_eq(p->sync_steps, 0);
    ck_assert_str_eq(p->batch_why,
                     "node 'nz' (NonZero) has a batched input and shapes known only at run time");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);

    /* no input with an axis 0 */
    g = gx_graph_new("scalar");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 0, NULL), GX_OK);
    s_node(g, "Relu", "r", NAMES("x"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    in[0] = ot_view(GX_F32, NULL, 0, NULL);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_str_eq(p->batch_why, "no input has an axis 0 to split");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* A keyed input (Reshape's shape) is not part of the batch, and the
 * Reshape it feeds splits when it copies axis 0. */
START_TEST(test_plan_keyed)
{
    gx_graph *g = gx_graph_new("keyed");
    s_input(g, "x", GX_F32, 3, (int64_t[]){1, 4, 5});
    ck_assert_int_eq(gx_graph_add_input(g, "shape", GX_I64, 1, (int64_t[]){2}), GX_OK);
    s_node(g, "Reshape", "rs", NAMES("x", "shape"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_view in[2] = {s_shape_view(GX_F32, SHAPE(1, 4, 5), 6), I64V(SHAPE(2), 0, -1)};
    gxd_plan *p = s_compile(g, in);
    ck_assert_msg(p->batch == 6, "%s", p->batch_why);
    gxd_plan_destroy(&p);
    in[1] = I64V(SHAPE(2), 6, -1);
    p = s_compile(g, in);
    ck_assert_int_eq(p->batch, 0);
    ck_assert_str_eq(p->batch_why, "node 'rs' (Reshape) mixes samples");
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- the property: slices give the whole batch's bytes ---- */

typedef struct s_outs {
    size_t n;
    gx_view v[4];
    unsigned char *data[4];
    size_t nbytes[4];
} s_outs;

static void s_outs_free(s_outs *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->data[i]);
    memset(o, 0, sizeof *o);
}

/* Compiles g for in, runs it with the sequential executor and copies its
 * outputs into o; returns the plan (the caller destroys it). */
static gxd_plan *s_exec(const gx_graph *g, const gx_view *in, s_outs *o)
{
    char err[512] = "";
    gxd_plan *p = s_compile(g, in);
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    ck_assert_ptr_nonnull(arena);
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    gxd_frame f;
    ck_assert_msg(gxd_frame_init(&f, p, arena, in, &s_lim, &stop, err, sizeof err) == GX_OK, "%s",
                  err);
    ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "run: %s", err);
    ck_assert_uint_le(p->n_outputs, 4);
    o->n = p->n_outputs;
    for (size_t i = 0; i < o->n; i++) {
        const gx_view *v = gxd_frame_output(&f, i);
        o->v[i] = *v;
        o->v[i].data = NULL;
        o->nbytes[i] = (size_t)v->numel * gx_dtype_size(v->dtype);
        o->data[i] = malloc(o->nbytes[i] + 1);
        ck_assert_ptr_nonnull(o->data[i]);
        memcpy(o->data[i], v->data, o->nbytes[i]);
    }
    gxd_frame_fini(&f);
    free(arena);
    return p;
}

/* Runs g on in (batch B on axis 0 of every non-keyed input of rank >= 1),
 * then on slices of the sizes cuts[] (summing to B), each through a plan
 * of its own, and requires the outputs, concatenated along axis 0, to be
 * byte for byte the whole batch's.
 *
 * Not `exact`: float32 outputs need only be close. OpenBLAS's sgemm
 * (0.3.21, Haswell kernels) gives rows bits that depend on M, the number of
 * rows in the call: the same row of A times the same B differs in the last
 * bits between M = 6 and M = 3. MatMul and Gemm put the batch into M, so
 * graphs that use them on batched rows are split exactly in the maths but
 * not in the bits (an intra-op share of rows has the same effect). */
static void s_check_split(const gx_graph *g, const gx_view *in, size_t n_in, int64_t B,
                          const int64_t *cuts, size_t n_cuts, bool exact)
{
    s_outs whole = {0};
    gxd_plan *p = s_exec(g, in, &whole);
    ck_assert_msg(p->batch == B, "batch %lld: %s", (long long)p->batch, p->batch_why);
    bool sliced[8];
    ck_assert_uint_le(n_in, 8);
    for (size_t i = 0; i < n_in; i++) {
        const gxd_value *v = &p->values[p->inputs[i]];
        sliced[i] = !v->keyed && v->view.ndim >= 1;
    }
    gxd_plan_destroy(&p);

    size_t done[4] = {0};
    int64_t at = 0;
    for (size_t c = 0; c < n_cuts; c++) {
        gx_view part[8];
        for (size_t i = 0; i < n_in; i++) {
            part[i] = in[i];
            if (!sliced[i])
                continue;
            size_t row = (size_t)(in[i].numel / B) * gx_dtype_size(in[i].dtype);
            part[i].shape[0] = cuts[c];
            part[i].numel = in[i].numel / B * cuts[c];
            part[i].data = (unsigned char *)in[i].data + (size_t)at * row;
        }
        s_outs o = {0};
        p = s_exec(g, part, &o);
        ck_assert_int_eq(p->batch, cuts[c] >= 2 ? cuts[c] : 0);
        gxd_plan_destroy(&p);
        ck_assert_uint_eq(o.n, whole.n);
        for (size_t k = 0; k < o.n; k++) {
            ck_assert_int_eq(o.v[k].dtype, whole.v[k].dtype);
            ck_assert_int_eq(o.v[k].ndim, whole.v[k].ndim);
            ck_assert_int_eq(o.v[k].shape[0], cuts[c]);
            for (int d = 1; d < o.v[k].ndim; d++)
                ck_assert_int_eq(o.v[k].shape[d], whole.v[k].shape[d]);
            ck_assert_uint_le(done[k] + o.nbytes[k], whole.nbytes[k]);
            bool same = memcmp(o.data[k], whole.data[k] + done[k], o.nbytes[k]) == 0;
            if (!same && !exact && o.v[k].dtype == GX_F32)
                same = ot_close((const float *)o.data[k], (const float *)(whole.data[k] + done[k]),
                                o.v[k].numel, 1e-5f, 1e-6f);
            ck_assert_msg(same,
                          "output %zu of the slice at %lld (%lld samples) differs from the "
                          "whole batch's",
                          k, (long long)at, (long long)cuts[c]);
            done[k] += o.nbytes[k];
        }
        s_outs_free(&o);
        at += cuts[c];
    }
    ck_assert_int_eq(at, B);
    for (size_t k = 0; k < whole.n; k++)
        ck_assert_uint_eq(done[k], whole.nbytes[k]);
    s_outs_free(&whole);
}

static const int64_t s_cuts[] = {3, 2, 1};

START_TEST(test_split_mlp)
{
    gx_graph *g = s_mlp();
    gx_view x = RANDV(6, 16);
    s_check_split(g, &x, 1, 6, s_cuts, 3, false);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_split_cnn)
{
    gx_graph *g = s_cnn(0);
    gx_view x = RANDV(6, 3, 8, 8);
    s_check_split(g, &x, 1, 6, s_cuts, 3, false);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_split_attention)
{
    gx_graph *g = s_attention();
    gx_view tok = ot_view(GX_I64, ot_alloc(6 * 5 * sizeof(int64_t)), SHAPE(6, 5));
    for (int i = 0; i < 30; i++)
        ((int64_t *)tok.data)[i] = (i * 7 + 3) % 20;
    s_check_split(g, &tok, 1, 6, s_cuts, 3, false);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_split_image)
{
    gx_graph *g = s_image();
    gx_view x = RANDV(6, 3, 8, 8);
    s_check_split(g, &x, 1, 6, s_cuts, 3, true);
    s_check_split(g, &x, 1, 6, (int64_t[]){1, 4, 1}, 3, true);
    gx_graph_destroy(&g);
}
END_TEST

/* Two batched inputs and a keyed one. */
START_TEST(test_split_two_inputs)
{
    gx_graph *g = gx_graph_new("two");
    s_input(g, "a", GX_F32, 3, (int64_t[]){1, 4, 5});
    s_input(g, "b", GX_F32, 2, (int64_t[]){1, 5});
    ck_assert_int_eq(gx_graph_add_input(g, "shape", GX_I64, 1, (int64_t[]){2}), GX_OK);
    s_ints(g, "one", 1, (int64_t[]){1});
    s_node(g, "Unsqueeze", "u", NAMES("b", "one"), NAMES("bu"));
    s_node(g, "Mul", "mul", NAMES("a", "bu"), NAMES("m"));
    s_node(g, "Reshape", "rs", NAMES("m", "shape"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_view in[3] = {RANDV(6, 4, 5), RANDV(6, 5), I64V(SHAPE(2), -1, 20)};
    s_check_split(g, in, 3, 6, s_cuts, 3, true);
    gx_graph_destroy(&g);
}
END_TEST

/* The MLP's layers on int32: MatMul, Add, Relu, Gemm and ArgMax run plain
 * loops, so the bytes must match exactly. */
START_TEST(test_split_int_mlp)
{
    gx_graph *g = gx_graph_new("int_mlp");
    s_input(g, "x", GX_I32, 2, (int64_t[]){1, 16});
    const int64_t sw1[] = {16, 8}, sw2[] = {8, 4};
    gx_tensor *w1 = gx_tensor_new(GX_I32, 2, sw1), *w2 = gx_tensor_new(GX_I32, 2, sw2);
    gx_tensor *b1 = gx_tensor_new(GX_I32, 1, (int64_t[]){8});
    ck_assert(w1 && w2 && b1);
    for (int i = 0; i < 16 * 8; i++)
        ((int32_t *)gx_tensor_data(w1))[i] = i % 7 - 3;
    for (int i = 0; i < 8 * 4; i++)
        ((int32_t *)gx_tensor_data(w2))[i] = i % 5 - 2;
    for (int i = 0; i < 8; i++)
        ((int32_t *)gx_tensor_data(b1))[i] = i - 4;
    ck_assert_int_eq(gx_graph_add_const(g, "w1", &w1), GX_OK);
    ck_assert_int_eq(gx_graph_add_const(g, "w2", &w2), GX_OK);
    ck_assert_int_eq(gx_graph_add_const(g, "b1", &b1), GX_OK);
    s_node(g, "MatMul", "mm1", NAMES("x", "w1"), NAMES("h0"));
    s_node(g, "Add", "add1", NAMES("h0", "b1"), NAMES("h1"));
    s_node(g, "Relu", "relu1", NAMES("h1"), NAMES("h2"));
    s_node(g, "Gemm", "fc2", NAMES("h2", "w2"), NAMES("y"));
    gx_node *n = s_node(g, "ArgMax", "best", NAMES("y"), NAMES("idx"));
    ck_assert_int_eq(gx_node_set_int(n, "axis", 1), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "idx"), GX_OK);
    gx_view x = ot_view(GX_I32, ot_alloc(6 * 16 * sizeof(int32_t)), SHAPE(6, 16));
    for (int i = 0; i < 6 * 16; i++)
        ((int32_t *)x.data)[i] = (i * 13) % 11 - 5;
    s_check_split(g, &x, 1, 6, s_cuts, 3, true);
    gx_graph_destroy(&g);
}
END_TEST

/* A constant of n bytes of dtype dt and shape (ndim, shape), byte i = f(i). */
static void s_byte_const(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                         const int64_t *shape, int mul, int mod, int off)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    ck_assert(t);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)gx_tensor_data(t))[i] = (uint8_t)((i * mul) % mod + off);
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* A quantized MLP: QLinearMatMul, then MatMulInteger of its bytes; every
 * sample of a split batch gets the whole batch's bytes and int32 sums. */
START_TEST(test_split_quantized_mlp)
{
    gx_graph *g = gx_graph_new("q_mlp");
    s_input(g, "x", GX_U8, 2, (int64_t[]){1, 16});
    s_byte_const(g, "w1", GX_U8, 2, (int64_t[]){16, 8}, 37, 251, 0);
    s_byte_const(g, "w2", GX_I8, 2, (int64_t[]){8, 4}, 11, 19, 0);
    s_byte_const(g, "xz", GX_U8, 0, NULL, 0, 1, 120);
    s_byte_const(g, "wz", GX_U8, 0, NULL, 0, 1, 128);
    s_byte_const(g, "yz", GX_U8, 0, NULL, 0, 1, 7);
    gx_tensor *sc = gx_tensor_new(GX_F32, 0, NULL);
    ck_assert(sc);
    *(float *)gx_tensor_data(sc) = 0.0625f;
    ck_assert_int_eq(gx_graph_add_const(g, "sc", &sc), GX_OK);
    s_node(g, "QLinearMatMul", "qmm", NAMES("x", "sc", "xz", "w1", "sc", "wz", "sc", "yz"),
           NAMES("h"));
    s_node(g, "MatMulInteger", "mmi", NAMES("h", "w2", "yz"), NAMES("y"));
    ck_assert_int_eq(gx_graph_add_output(g, "h"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_view x = ot_view(GX_U8, ot_alloc(6 * 16), SHAPE(6, 16));
    for (int i = 0; i < 6 * 16; i++)
        ((uint8_t *)x.data)[i] = (uint8_t)((i * 29) % 256);
    s_check_split(g, &x, 1, 6, s_cuts, 3, true);
    gx_graph_destroy(&g);
}
END_TEST

Suite *batch_suite(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("rules");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_unbatched_inputs);
    tcase_add_test(tc, test_elementwise);
    tcase_add_test(tc, test_softmax_and_norms);
    tcase_add_test(tc, test_conv_and_pools);
    tcase_add_test(tc, test_matmul_gemm);
    tcase_add_test(tc, test_quantized_matmuls);
    tcase_add_test(tc, test_reduce);
    tcase_add_test(tc, test_reshape_family);
    tcase_add_test(tc, test_concat_split_slice);
    tcase_add_test(tc, test_gather_expand_tile_shape);
    suite_add_tcase(s, tc);
    tc = tcase_create("plans");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_plan_mlp);
    tcase_add_test(tc, test_plan_cnn);
    tcase_add_test(tc, test_plan_reasons);
    tcase_add_test(tc, test_plan_keyed);
    suite_add_tcase(s, tc);
    tc = tcase_create("split");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_split_mlp);
    tcase_add_test(tc, test_split_int_mlp);
    tcase_add_test(tc, test_split_quantized_mlp);
    tcase_add_test(tc, test_split_cnn);
    tcase_add_test(tc, test_split_attention);
    tcase_add_test(tc, test_split_image);
    tcase_add_test(tc, test_split_two_inputs);
    suite_add_tcase(s, tc);
    return s;
}
