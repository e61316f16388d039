/*
 * Op tests of the logic family (GX_OPS_LOGIC in ops/op.h): hand-computed
 * cases (most from the ONNX node tests), naive references on random data,
 * every attribute variant, and the errors infer gives. Every kernel run is
 * repeated with nth = 3 and 7, must match nth = 1, and its shares must
 * write every output byte exactly once.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h" /* f16/bf16 conversions for the references */
#include "tests/optest.h"
#include "tests/testutil.h"

/* ---- literal views of every dtype ---- */

/* Like F32V; shape must reach ot_view unexpanded (SHAPE has commas), so
 * each dtype spells the call out. */
#define F64V(shape, ...)                                                      \
    ot_view(GX_F64, ot_copy((double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__})), shape)
#define F16V(shape, ...) /* bits */                                           \
    ot_view(GX_F16, ot_copy((uint16_t[]){__VA_ARGS__}, sizeof((uint16_t[]){__VA_ARGS__})), shape)
#define BF16V(shape, ...) /* bits */                                          \
    ot_view(GX_BF16, ot_copy((uint16_t[]){__VA_ARGS__}, sizeof((uint16_t[]){__VA_ARGS__})), shape)
#define I8V(shape, ...)                                                       \
    ot_view(GX_I8, ot_copy((int8_t[]){__VA_ARGS__}, sizeof((int8_t[]){__VA_ARGS__})), shape)
#define I16V(shape, ...)                                                      \
    ot_view(GX_I16, ot_copy((int16_t[]){__VA_ARGS__}, sizeof((int16_t[]){__VA_ARGS__})), shape)
#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
#define U8V(shape, ...)                                                       \
    ot_view(GX_U8, ot_copy((uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})), shape)
#define U16V(shape, ...)                                                      \
    ot_view(GX_U16, ot_copy((uint16_t[]){__VA_ARGS__}, sizeof((uint16_t[]){__VA_ARGS__})), shape)
#define U32V(shape, ...)                                                      \
    ot_view(GX_U32, ot_copy((uint32_t[]){__VA_ARGS__}, sizeof((uint32_t[]){__VA_ARGS__})), shape)
#define U64V(shape, ...)                                                      \
    ot_view(GX_U64, ot_copy((uint64_t[]){__VA_ARGS__}, sizeof((uint64_t[]){__VA_ARGS__})), shape)
#define BOOLV(shape, ...)                                                     \
    ot_view(GX_BOOL, ot_copy((uint8_t[]){__VA_ARGS__}, sizeof((uint8_t[]){__VA_ARGS__})), shape)

/* The shape argument pair of a scalar. */
#define SCALAR 0, (const int64_t *)NULL

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* An empty view (numel 0) of dt and shape. */
static gx_view s_empty(gx_dtype dt, int ndim, const int64_t *shape)
{
    return ot_view(dt, ot_alloc(0), ndim, shape);
}

/* ---- running ops ---- */

static void s_assert_same(gx_op op, const gx_view *got, const gx_view *want, const char *what)
{
    ck_assert_msg(got->dtype == want->dtype, "%s: dtype %s, want %s", gx_op_name(op),
                  gx_dtype_name(got->dtype), gx_dtype_name(want->dtype));
    ot_check_shape(got, want->ndim, want->shape);
    size_t es = gx_dtype_size(want->dtype);
    for (int64_t i = 0; i < want->numel; i++)
        ck_assert_msg(memcmp((const char *)got->data + i * (int64_t)es,
                             (const char *)want->data + i * (int64_t)es, es) == 0,
                      "%s: element %lld of %lld differs (%s)", gx_op_name(op), (long long)i,
                      (long long)want->numel, what);
}

/* Runs op with nth = 1, then 3 and 7 (same bytes, shares tile the
 * output). Returns the output. */
static gx_view s_run(gx_op op, const gx_node *node, int n_in, const gx_view *in)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out1, outn;
    char err[ERRLEN];
    int rc = ot_run(op, node, n_in, in, 1, av, &out1, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    for (int nth = 3; nth <= 7; nth += 4) {
        ck_assert_int_eq(ot_run(op, node, n_in, in, nth, av, &outn, err), GX_OK);
        s_assert_same(op, &outn, &out1, nth == 3 ? "nth=3 vs nth=1" : "nth=7 vs nth=1");
        ot_check_shares(op, av, n_in, in, 1, &out1, nth);
    }
    return out1;
}

/* Runs op and expects exactly want (dtype, shape, bytes). */
static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want)
{
    gx_view got = s_run(op, node, n_in, in);
    s_assert_same(op, &got, &want, "vs expected");
}

/* Infer alone, for inputs whose data may be missing (not known yet). */
static int s_infer(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(op, node, av, err, ERRLEN), GX_OK);
    memset(out, 0, sizeof *out);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = ERRLEN};
    return gx_op_schema_get(op)->infer(&ic);
}

static gx_view s_unknown(gx_view v)
{
    v.data = NULL;
    return v;
}

/* ---- naive references ---- */

/* Order of element i of a against element j of b (same dtype): -1, 0, 1,
 * or 2 when unordered (NaN). */
static int s_order(gx_dtype dt, const void *a, int64_t i, const void *b, int64_t j)
{
#define S_ORD(x, y) ((x) < (y) ? -1 : (x) > (y) ? 1 : (x) == (y) ? 0 : 2)
    switch (dt) {
    case GX_F32:
        return S_ORD(((const float *)a)[i], ((const float *)b)[j]);
    case GX_F64:
        return S_ORD(((const double *)a)[i], ((const double *)b)[j]);
    case GX_F16:
        return S_ORD(gx_f16_to_f32(((const uint16_t *)a)[i]),
                     gx_f16_to_f32(((const uint16_t *)b)[j]));
    case GX_BF16:
        return S_ORD(gx_bf16_to_f32(((const uint16_t *)a)[i]),
                     gx_bf16_to_f32(((const uint16_t *)b)[j]));
    case GX_I8:
        return S_ORD(((const int8_t *)a)[i], ((const int8_t *)b)[j]);
    case GX_I16:
        return S_ORD(((const int16_t *)a)[i], ((const int16_t *)b)[j]);
    case GX_I32:
        return S_ORD(((const int32_t *)a)[i], ((const int32_t *)b)[j]);
    case GX_I64:
        return S_ORD(((const int64_t *)a)[i], ((const int64_t *)b)[j]);
    case GX_U8:
        return S_ORD(((const uint8_t *)a)[i], ((const uint8_t *)b)[j]);
    case GX_U16:
        return S_ORD(((const uint16_t *)a)[i], ((const uint16_t *)b)[j]);
    case GX_U32:
        return S_ORD(((const uint32_t *)a)[i], ((const uint32_t *)b)[j]);
    case GX_U64:
        return S_ORD(((const uint64_t *)a)[i], ((const uint64_t *)b)[j]);
    case GX_BOOL:
        return S_ORD(((const uint8_t *)a)[i] != 0, ((const uint8_t *)b)[j] != 0);
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
#undef S_ORD
    ck_abort_msg("bad dtype");
    return 2;
}

static bool s_cmp_holds(gx_op op, int ord)
{
    return op == GX_OP_EQUAL           ? ord == 0
           : op == GX_OP_LESS          ? ord == -1
           : op == GX_OP_GREATER       ? ord == 1
           : op == GX_OP_LESS_OR_EQUAL ? ord == -1 || ord == 0
                                       : ord == 1 || ord == 0;
}

/* Broadcast result shape of a and b (they must broadcast). */
static gx_view s_bcast_out(gx_dtype dt, int n, const gx_view *in)
{
    int nd = in[0].ndim;
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, in[0].shape, sizeof shape);
    for (int i = 1; i < n; i++)
        ck_assert(gx_broadcast_shape(nd, shape, in[i].ndim, in[i].shape, &nd, shape));
    gx_view y = ot_view(dt, NULL, nd, shape);
    y.data = ot_alloc((size_t)y.numel * gx_dtype_size(dt));
    return y;
}

static void s_check_cmp_ref(gx_op op, gx_view a, gx_view b)
{
    gx_view want = s_bcast_out(GX_BOOL, 2, (gx_view[]){a, b});
    int64_t idx[GX_MAX_DIMS];
    for (int64_t i = 0; i < want.numel; i++) {
        ot_unravel(i, want.ndim, want.shape, idx);
        int ord = s_order(a.dtype, a.data, ot_bcast_off(want.ndim, idx, a.ndim, a.shape), b.data,
                          ot_bcast_off(want.ndim, idx, b.ndim, b.shape));
        ((uint8_t *)want.data)[i] = s_cmp_holds(op, ord);
    }
    s_expect(op, NULL, 2, (gx_view[]){a, b}, want);
}

/* Random view whose elements are mostly repeated values, so that equal
 * pairs occur (ot_rand alone almost never repeats). */
static gx_view s_rand_few(gx_dtype dt, int ndim, const int64_t *shape)
{
    gx_view v = ot_rand(dt, ndim, shape);
    size_t es = gx_dtype_size(dt);
    for (int64_t i = 1; i < v.numel; i++)
        if ((i * 7) % 3 == 0)
            memcpy((char *)v.data + i * (int64_t)es, (char *)v.data + (i / 2) * (int64_t)es, es);
    return v;
}

/* ---- comparisons ---- */

START_TEST(test_compare_hand)
{
    gx_view a = F32V(SHAPE(2, 3), 1, 2, 3, NAN, -0.0f, 5);
    gx_view b = F32V(SHAPE(3), 2, 2, NAN);
    gx_view in[] = {a, b};
    s_expect(GX_OP_EQUAL, NULL, 2, in, BOOLV(SHAPE(2, 3), 0, 1, 0, 0, 0, 0));
    s_expect(GX_OP_LESS, NULL, 2, in, BOOLV(SHAPE(2, 3), 1, 0, 0, 0, 1, 0));
    s_expect(GX_OP_GREATER, NULL, 2, in, BOOLV(SHAPE(2, 3), 0, 0, 0, 0, 0, 0));
    s_expect(GX_OP_LESS_OR_EQUAL, NULL, 2, in, BOOLV(SHAPE(2, 3), 1, 1, 0, 0, 1, 0));
    s_expect(GX_OP_GREATER_OR_EQUAL, NULL, 2, in, BOOLV(SHAPE(2, 3), 0, 1, 0, 0, 0, 0));
    /* -0 == +0 also in float16 (0x8000 vs 0x0000); NaN is unequal to itself */
    s_expect(GX_OP_EQUAL, NULL, 2,
             (gx_view[]){F16V(SHAPE(3), 0x8000, 0x7e00, 0x3c00), F16V(SHAPE(3), 0, 0x7e00, 0x3c00)},
             BOOLV(SHAPE(3), 1, 0, 1));
    /* 64-bit integers compare exactly, beyond what a double holds */
    s_expect(GX_OP_LESS, NULL, 2,
             (gx_view[]){I64V(SHAPE(2), INT64_MAX - 1, INT64_MIN), I64V(SHAPE(1), INT64_MAX)},
             BOOLV(SHAPE(2), 1, 1));
    s_expect(GX_OP_GREATER, NULL, 2,
             (gx_view[]){U64V(SHAPE(2), UINT64_MAX, 1), U64V(SHAPE(2), UINT64_MAX - 1, 0)},
             BOOLV(SHAPE(2), 1, 1));
    /* bool: any nonzero byte is true */
    s_expect(GX_OP_EQUAL, NULL, 2, (gx_view[]){BOOLV(SHAPE(3), 2, 0, 1), BOOLV(SHAPE(3), 1, 0, 0)},
             BOOLV(SHAPE(3), 1, 1, 0));
    /* test_equal_bcast: int32 [3,4,5] vs [5] (rows here) */
    s_expect(GX_OP_EQUAL, NULL, 2,
             (gx_view[]){I32V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6), I32V(SHAPE(3), 4, 2, 6)},
             BOOLV(SHAPE(2, 3), 0, 1, 0, 1, 0, 1));
    /* scalar against a tensor, both ways */
    s_expect(GX_OP_GREATER, NULL, 2, (gx_view[]){I8V(SCALAR, 0), I8V(SHAPE(3), -1, 0, 1)},
             BOOLV(SHAPE(3), 1, 0, 0));
}
END_TEST

START_TEST(test_compare_ref)
{
    static const gx_op ops[] = {GX_OP_EQUAL, GX_OP_LESS, GX_OP_GREATER, GX_OP_LESS_OR_EQUAL,
                                GX_OP_GREATER_OR_EQUAL};
    for (int dt = 0; dt < GX_STRING; dt++) {
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            s_check_cmp_ref(ops[o], s_rand_few((gx_dtype)dt, SHAPE(3, 37, 41)),
                            s_rand_few((gx_dtype)dt, SHAPE(41)));
            s_check_cmp_ref(ops[o], s_rand_few((gx_dtype)dt, SHAPE(5, 1, 7)),
                            s_rand_few((gx_dtype)dt, SHAPE(1, 9, 1)));
            s_check_cmp_ref(ops[o], s_rand_few((gx_dtype)dt, SHAPE(1)),
                            s_rand_few((gx_dtype)dt, SHAPE(300)));
            ot_free_all();
        }
    }
}
END_TEST

/* ---- And Or Xor Not ---- */

START_TEST(test_logical)
{
    gx_view a = BOOLV(SHAPE(2, 2), 0, 0, 1, 3), b = BOOLV(SHAPE(2, 2), 0, 1, 0, 1);
    s_expect(GX_OP_AND, NULL, 2, (gx_view[]){a, b}, BOOLV(SHAPE(2, 2), 0, 0, 0, 1));
    s_expect(GX_OP_OR, NULL, 2, (gx_view[]){a, b}, BOOLV(SHAPE(2, 2), 0, 1, 1, 1));
    s_expect(GX_OP_XOR, NULL, 2, (gx_view[]){a, b}, BOOLV(SHAPE(2, 2), 0, 1, 1, 0));
    s_expect(GX_OP_NOT, NULL, 1, (gx_view[]){a}, BOOLV(SHAPE(2, 2), 1, 1, 0, 0));
    /* test_and_bcast4v4d-like: [1,2,1,2] with [2,1,2,1] */
    gx_view c = BOOLV(SHAPE(1, 2, 1, 2), 1, 0, 1, 1), d = BOOLV(SHAPE(2, 1, 2, 1), 1, 0, 0, 1);
    s_expect(GX_OP_AND, NULL, 2, (gx_view[]){c, d},
             BOOLV(SHAPE(2, 2, 2, 2), 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1));
    s_expect(GX_OP_XOR, NULL, 2, (gx_view[]){c, d},
             BOOLV(SHAPE(2, 2, 2, 2), 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0));
    /* large, against a reference */
    gx_view x = ot_rand(GX_BOOL, SHAPE(7, 33, 5)), y = ot_rand(GX_BOOL, SHAPE(33, 1));
    for (int i = 0; i < x.numel; i++)
        ((uint8_t *)x.data)[i] &= 1;
    for (int i = 0; i < y.numel; i++)
        ((uint8_t *)y.data)[i] &= 1;
    gx_view w = s_bcast_out(GX_BOOL, 2, (gx_view[]){x, y});
    int64_t idx[GX_MAX_DIMS];
    for (int64_t i = 0; i < w.numel; i++) {
        ot_unravel(i, w.ndim, w.shape, idx);
        ((uint8_t *)w.data)[i] = ((uint8_t *)x.data)[i] |
                                 ((uint8_t *)y.data)[ot_bcast_off(3, idx, 2, y.shape)];
    }
    s_expect(GX_OP_OR, NULL, 2, (gx_view[]){x, y}, w);
    s_run(GX_OP_NOT, NULL, 1, (gx_view[]){x});
}
END_TEST

/* ---- BitShift ---- */

START_TEST(test_bit_shift)
{
    const gx_node *left = NODE(A_STR("direction", "LEFT")), *right = NODE(A_STR("direction", "RIGHT"));
    /* test_bitshift_left_uint8 / right */
    s_expect(GX_OP_BIT_SHIFT, left, 2, (gx_view[]){U8V(SHAPE(3), 16, 4, 1), U8V(SHAPE(3), 1, 2, 3)},
             U8V(SHAPE(3), 32, 16, 8));
    s_expect(GX_OP_BIT_SHIFT, right, 2,
             (gx_view[]){U8V(SHAPE(3), 16, 4, 1), U8V(SHAPE(3), 1, 2, 3)}, U8V(SHAPE(3), 8, 1, 0));
    /* bits shifted out are lost; a shift by the width or more gives 0 */
    s_expect(GX_OP_BIT_SHIFT, left, 2,
             (gx_view[]){U8V(SHAPE(4), 0xff, 0xff, 1, 1), U8V(SHAPE(4), 4, 8, 7, 255)},
             U8V(SHAPE(4), 0xf0, 0, 0x80, 0));
    s_expect(GX_OP_BIT_SHIFT, left, 2,
             (gx_view[]){U16V(SHAPE(3), 0xffff, 3, 1), U16V(SHAPE(1), 15)},
             U16V(SHAPE(3), 0x8000, 0x8000, 0x8000));
    s_expect(GX_OP_BIT_SHIFT, right, 2,
             (gx_view[]){U32V(SHAPE(3), 0xffffffffu, 0x80000000u, 5), U32V(SHAPE(3), 31, 32, 0)},
             U32V(SHAPE(3), 1, 0, 5));
    s_expect(GX_OP_BIT_SHIFT, left, 2,
             (gx_view[]){U64V(SHAPE(1), 1), U64V(SHAPE(4), 63, 64, 1000, UINT64_MAX)},
             U64V(SHAPE(4), 1ull << 63, 0, 0, 0));
    s_expect(GX_OP_BIT_SHIFT, right, 2,
             (gx_view[]){U64V(SHAPE(2), UINT64_MAX, UINT64_MAX), U64V(SHAPE(2), 63, 64)},
             U64V(SHAPE(2), 1, 0));
    s_run(GX_OP_BIT_SHIFT, right, 2,
          (gx_view[]){ot_rand(GX_U32, SHAPE(9, 101)), U32V(SHAPE(9, 1), 0, 1, 2, 3, 4, 5, 6, 7, 8)});
    ot_expect_error(GX_OP_BIT_SHIFT, NODE(A_STR("direction", "left")), 2,
                    (gx_view[]){U8V(SHAPE(1), 1), U8V(SHAPE(1), 1)}, GX_EATTR,
                    "BitShift: direction 'left' is not LEFT or RIGHT");
    ot_expect_error(GX_OP_BIT_SHIFT, NULL, 2, (gx_view[]){U8V(SHAPE(1), 1), U8V(SHAPE(1), 1)},
                    GX_EATTR, "BitShift: attribute 'direction' is required");
    ot_expect_error(GX_OP_BIT_SHIFT, left, 2, (gx_view[]){I32V(SHAPE(1), 1), I32V(SHAPE(1), 1)},
                    GX_EDTYPE, "BitShift: input 0 is int32, expected an unsigned integer type");
    ot_expect_error(GX_OP_BIT_SHIFT, left, 2, (gx_view[]){U8V(SHAPE(1), 1), U16V(SHAPE(1), 1)},
                    GX_EDTYPE,
                    "BitShift: inputs 0 and 1 are uint8 and uint16, expected one dtype");
}
END_TEST

/* ---- Where ---- */

static void s_check_where_ref(gx_view c, gx_view x, gx_view y)
{
    gx_view w = s_bcast_out(x.dtype, 3, (gx_view[]){c, x, y});
    size_t es = gx_dtype_size(x.dtype);
    int64_t idx[GX_MAX_DIMS];
    for (int64_t i = 0; i < w.numel; i++) {
        ot_unravel(i, w.ndim, w.shape, idx);
        bool t = ((uint8_t *)c.data)[ot_bcast_off(w.ndim, idx, c.ndim, c.shape)] != 0;
        const gx_view *s = t ? &x : &y;
        memcpy((char *)w.data + i * (int64_t)es,
               (char *)s->data + ot_bcast_off(w.ndim, idx, s->ndim, s->shape) * (int64_t)es, es);
    }
    s_expect(GX_OP_WHERE, NULL, 3, (gx_view[]){c, x, y}, w);
}

START_TEST(test_where)
{
    /* test_where_example, test_where_long_example */
    gx_view c = BOOLV(SHAPE(2, 2), 1, 0, 1, 1);
    s_expect(GX_OP_WHERE, NULL, 3,
             (gx_view[]){c, F32V(SHAPE(2, 2), 1, 2, 3, 4), F32V(SHAPE(2, 2), 9, 8, 7, 6)},
             F32V(SHAPE(2, 2), 1, 8, 3, 4));
    s_expect(GX_OP_WHERE, NULL, 3,
             (gx_view[]){c, I64V(SHAPE(2, 2), 1, 2, 3, 4), I64V(SHAPE(2, 2), 9, 8, 7, 6)},
             I64V(SHAPE(2, 2), 1, 8, 3, 4));
    /* all three broadcast */
    s_expect(GX_OP_WHERE, NULL, 3,
             (gx_view[]){BOOLV(SHAPE(2, 1), 1, 0), U8V(SHAPE(1, 3), 1, 2, 3), U8V(SCALAR, 9)},
             U8V(SHAPE(2, 3), 1, 2, 3, 9, 9, 9));
    for (int dt = 0; dt < GX_STRING; dt++) {
        s_check_where_ref(ot_rand(GX_BOOL, SHAPE(5, 1, 67)), ot_rand((gx_dtype)dt, SHAPE(3, 1)),
                          ot_rand((gx_dtype)dt, SHAPE(5, 3, 67)));
        s_check_where_ref(ot_rand(GX_BOOL, SHAPE(333)), ot_rand((gx_dtype)dt, SHAPE(333)),
                          ot_rand((gx_dtype)dt, SHAPE(333)));
        ot_free_all();
    }
    ot_expect_error(GX_OP_WHERE, NULL, 3,
                    (gx_view[]){U8V(SHAPE(1), 1), U8V(SHAPE(1), 1), U8V(SHAPE(1), 1)}, GX_EDTYPE,
                    "Where: input 0 is uint8, expected bool");
    ot_expect_error(GX_OP_WHERE, NULL, 3,
                    (gx_view[]){BOOLV(SHAPE(1), 1), U8V(SHAPE(1), 1), I8V(SHAPE(1), 1)}, GX_EDTYPE,
                    "Where: inputs 1 and 2 are uint8 and int8, expected one dtype");
    ot_expect_error(GX_OP_WHERE, NULL, 3,
                    (gx_view[]){BOOLV(SHAPE(2), 1, 0), U8V(SHAPE(3), 1, 2, 3), U8V(SHAPE(1), 1)},
                    GX_ESHAPE, "Where: shapes [2] and [3] are not broadcastable");
}
END_TEST

/* ---- IsNaN, IsInf ---- */

START_TEST(test_isnan_isinf)
{
    /* test_isnan, test_isinf and its detect_* variants */
    s_expect(GX_OP_ISNAN, NULL, 1, (gx_view[]){F32V(SHAPE(4), 3, NAN, 4, -NAN)},
             BOOLV(SHAPE(4), 0, 1, 0, 1));
    gx_view x = F32V(SHAPE(6), -1.2f, NAN, INFINITY, 2.8f, -INFINITY, INFINITY);
    s_expect(GX_OP_ISINF, NULL, 1, (gx_view[]){x}, BOOLV(SHAPE(6), 0, 0, 1, 0, 1, 1));
    s_expect(GX_OP_ISINF, NODE(A_INT("detect_positive", 0)), 1, (gx_view[]){x},
             BOOLV(SHAPE(6), 0, 0, 0, 0, 1, 0));
    s_expect(GX_OP_ISINF, NODE(A_INT("detect_negative", 0)), 1, (gx_view[]){x},
             BOOLV(SHAPE(6), 0, 0, 1, 0, 0, 1));
    s_expect(GX_OP_ISINF, NODE(A_INT("detect_negative", 0), A_INT("detect_positive", 0)), 1,
             (gx_view[]){x}, BOOLV(SHAPE(6), 0, 0, 0, 0, 0, 0));
    gx_view d = F64V(SHAPE(4), NAN, INFINITY, -INFINITY, 1e308);
    s_expect(GX_OP_ISNAN, NULL, 1, (gx_view[]){d}, BOOLV(SHAPE(4), 1, 0, 0, 0));
    s_expect(GX_OP_ISINF, NULL, 1, (gx_view[]){d}, BOOLV(SHAPE(4), 0, 1, 1, 0));
    gx_view h = F16V(SHAPE(4), 0x7e00, 0x7c00, 0xfc00, 0x7bff);
    s_expect(GX_OP_ISNAN, NULL, 1, (gx_view[]){h}, BOOLV(SHAPE(4), 1, 0, 0, 0));
    s_expect(GX_OP_ISINF, NULL, 1, (gx_view[]){h}, BOOLV(SHAPE(4), 0, 1, 1, 0));
    gx_view b = BF16V(SHAPE(4), 0x7fc0, 0x7f80, 0xff80, 0x3f80);
    s_expect(GX_OP_ISNAN, NULL, 1, (gx_view[]){b}, BOOLV(SHAPE(4), 1, 0, 0, 0));
    s_expect(GX_OP_ISINF, NULL, 1, (gx_view[]){b}, BOOLV(SHAPE(4), 0, 1, 1, 0));
    s_run(GX_OP_ISNAN, NULL, 1, (gx_view[]){ot_rand(GX_F16, SHAPE(1001))});
    ot_expect_error(GX_OP_ISNAN, NULL, 1, (gx_view[]){I32V(SHAPE(1), 1)}, GX_EDTYPE,
                    "IsNaN: input 0 is int32, expected a floating-point type");
    ot_expect_error(GX_OP_ISINF, NULL, 1, (gx_view[]){BOOLV(SHAPE(1), 1)}, GX_EDTYPE,
                    "IsInf: input 0 is bool, expected a floating-point type");
    ot_expect_error(GX_OP_NOT, NULL, 1, (gx_view[]){F32V(SHAPE(1), 1)}, GX_EDTYPE,
                    "Not: input 0 is float32, expected bool");
    ot_expect_error(GX_OP_AND, NULL, 2, (gx_view[]){BOOLV(SHAPE(1), 1), U8V(SHAPE(1), 1)},
                    GX_EDTYPE, "And: input 1 is uint8, expected bool");
    ot_expect_error(GX_OP_EQUAL, NULL, 2, (gx_view[]){F32V(SHAPE(1), 1), I32V(SHAPE(1), 1)},
                    GX_EDTYPE, "Equal: inputs 0 and 1 are float32 and int32, expected one dtype");
    ot_expect_error(GX_OP_LESS, NULL, 2, (gx_view[]){F32V(SHAPE(2, 3), 1), F32V(SHAPE(2), 1, 2)},
                    GX_ESHAPE, "Less: shapes [2,3] and [2] are not broadcastable");
}
END_TEST

/* ---- Cast, CastLike ---- */

/* ONNX TensorProto.DataType of each gexec dtype. */
static int64_t s_onnx_code(gx_dtype dt)
{
    switch (dt) {
    case GX_F32:
        return 1;
    case GX_U8:
        return 2;
    case GX_I8:
        return 3;
    case GX_U16:
        return 4;
    case GX_I16:
        return 5;
    case GX_I32:
        return 6;
    case GX_I64:
        return 7;
    case GX_BOOL:
        return 9;
    case GX_F16:
        return 10;
    case GX_F64:
        return 11;
    case GX_U32:
        return 12;
    case GX_U64:
        return 13;
    case GX_BF16:
        return 16;
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    ck_abort_msg("bad dtype");
    return 0;
}

/* Stores small integer v (0..127) as element i of a view of dt. */
static void s_put_small(gx_dtype dt, void *p, int64_t i, int v)
{
    switch (dt) {
    case GX_F32:
        ((float *)p)[i] = (float)v;
        return;
    case GX_F64:
        ((double *)p)[i] = v;
        return;
    case GX_F16:
        ((uint16_t *)p)[i] = gx_f32_to_f16((float)v);
        return;
    case GX_BF16:
        ((uint16_t *)p)[i] = gx_f32_to_bf16((float)v);
        return;
    case GX_I8:
    case GX_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        return;
    case GX_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        return;
    case GX_I16:
    case GX_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        return;
    case GX_I32:
    case GX_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        return;
    case GX_I64:
    case GX_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        return;
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    ck_abort_msg("bad dtype");
}

START_TEST(test_cast_all_pairs)
{
    /* small integers are exact in every dtype: each of the 169 loops must
     * carry them over (bool: nonzero is 1) */
    const int64_t n = 300;
    for (int s = 0; s < GX_STRING; s++) {
        for (int d = 0; d < GX_STRING; d++) {
            gx_view x = ot_view((gx_dtype)s, ot_alloc((size_t)n * 8), SHAPE(3, 100));
            gx_view want = ot_view((gx_dtype)d, ot_alloc((size_t)n * 8), SHAPE(3, 100));
            for (int64_t i = 0; i < n; i++) {
                int v = (int)(i * 37 % 128);
                s_put_small((gx_dtype)s, x.data, i, v);
                s_put_small((gx_dtype)d, want.data, i, s == GX_BOOL ? v != 0 : v);
            }
            s_expect(GX_OP_CAST, NODE(A_INT("to", s_onnx_code((gx_dtype)d))), 1, (gx_view[]){x},
                     want);
            s_expect(GX_OP_CAST_LIKE, NULL, 2, (gx_view[]){x, s_empty((gx_dtype)d, SHAPE(0))},
                     want);
            ot_free_all();
        }
    }
}
END_TEST

#define CAST_TO(code) NODE(A_INT("to", code))

START_TEST(test_cast_edges)
{
    /* float -> integer: truncation toward zero, saturation, NaN -> 0 */
    gx_view f = F32V(SHAPE(8), 1.7f, -1.7f, NAN, 3e9f, -3e9f, INFINITY, -INFINITY, -0.0f);
    s_expect(GX_OP_CAST, CAST_TO(6), 1, (gx_view[]){f},
             I32V(SHAPE(8), 1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0));
    s_expect(GX_OP_CAST, CAST_TO(2), 1, (gx_view[]){f}, U8V(SHAPE(8), 1, 0, 0, 255, 0, 255, 0, 0));
    s_expect(GX_OP_CAST, CAST_TO(3), 1, (gx_view[]){F32V(SHAPE(4), 127.9f, 128, -128.5f, -129)},
             I8V(SHAPE(4), 127, 127, -128, -128));
    s_expect(GX_OP_CAST, CAST_TO(7), 1,
             (gx_view[]){F64V(SHAPE(5), 1e19, -1e19, 9.2e18, -9223372036854775808.0, 0.999)},
             I64V(SHAPE(5), INT64_MAX, INT64_MIN, 9200000000000000000, INT64_MIN, 0));
    s_expect(GX_OP_CAST, CAST_TO(13), 1, (gx_view[]){F64V(SHAPE(4), 1.8e19, 2e19, -5, NAN)},
             U64V(SHAPE(4), 18000000000000000000u, UINT64_MAX, 0, 0));
    s_expect(GX_OP_CAST, CAST_TO(12), 1, (gx_view[]){F16V(SHAPE(3), 0x7c00, 0x3c00, 0xbc00)},
             U32V(SHAPE(3), UINT32_MAX, 1, 0));
    /* integer -> integer wraps */
    s_expect(GX_OP_CAST, CAST_TO(3), 1, (gx_view[]){I64V(SHAPE(3), 300, -129, -1)},
             I8V(SHAPE(3), 44, 127, -1));
    s_expect(GX_OP_CAST, CAST_TO(4), 1, (gx_view[]){I32V(SHAPE(2), -1, 65537)},
             U16V(SHAPE(2), 65535, 1));
    s_expect(GX_OP_CAST, CAST_TO(7), 1, (gx_view[]){U64V(SHAPE(1), UINT64_MAX)}, I64V(SHAPE(1), -1));
    s_expect(GX_OP_CAST, CAST_TO(13), 1, (gx_view[]){I8V(SHAPE(1), -2)}, U64V(SHAPE(1), UINT64_MAX - 1));
    /* to and from bool */
    s_expect(GX_OP_CAST, CAST_TO(9), 1, (gx_view[]){F32V(SHAPE(4), NAN, -0.0f, 0.1f, 0)},
             BOOLV(SHAPE(4), 1, 0, 1, 0));
    s_expect(GX_OP_CAST, CAST_TO(9), 1, (gx_view[]){I64V(SHAPE(3), INT64_MIN, 0, 256)},
             BOOLV(SHAPE(3), 1, 0, 1));
    s_expect(GX_OP_CAST, CAST_TO(1), 1, (gx_view[]){BOOLV(SHAPE(3), 2, 0, 1)},
             F32V(SHAPE(3), 1, 0, 1));
    /* float16: round to nearest even, overflow to inf, underflow to 0 */
    s_expect(GX_OP_CAST, CAST_TO(10), 1,
             (gx_view[]){F32V(SHAPE(6), 1, -2.5f, 65504, 65520, 1e-8f, NAN)},
             F16V(SHAPE(6), 0x3c00, 0xc100, 0x7bff, 0x7c00, 0, 0x7e00));
    s_expect(GX_OP_CAST, CAST_TO(1), 1, (gx_view[]){F16V(SHAPE(4), 0x3c00, 0xc100, 1, 0xfc00)},
             F32V(SHAPE(4), 1, -2.5f, 0x1p-24f, -INFINITY));
    s_expect(GX_OP_CAST, CAST_TO(10), 1, (gx_view[]){I32V(SHAPE(3), 70000, -3, 2049)},
             F16V(SHAPE(3), 0x7c00, 0xc200, 0x6800));
    /* double -> float16 directly, not via float32 (which would land on a
     * tie and round to even): 1 + 3*2^-11 - 2^-40 is just below the
     * midpoint of 0x3c01 and 0x3c02 */
    s_expect(GX_OP_CAST, CAST_TO(10), 1,
             (gx_view[]){F64V(SHAPE(3), 1 + 3 * 0x1p-11 - 0x1p-40, 1 + 3 * 0x1p-11, 1e300)},
             F16V(SHAPE(3), 0x3c01, 0x3c02, 0x7c00));
    /* bfloat16, ties to even; a 64-bit integer just above a bfloat16
     * midpoint (2^60 + 2^52 + 1) rounds up, though float32 holds 2^60 + 2^52 */
    s_expect(GX_OP_CAST, CAST_TO(16), 1,
             (gx_view[]){F32V(SHAPE(4), 1, 1.00390625f, 1.01171875f, -INFINITY)},
             BF16V(SHAPE(4), 0x3f80, 0x3f80, 0x3f82, 0xff80));
    s_expect(GX_OP_CAST, CAST_TO(16), 1,
             (gx_view[]){I64V(SHAPE(3), (1ll << 60) + (1ll << 52) + 1, -((1ll << 60) + (1ll << 52)), 3)},
             BF16V(SHAPE(3), 0x5d81, 0xdd80, 0x4040));
    s_expect(GX_OP_CAST, CAST_TO(16), 1, (gx_view[]){U64V(SHAPE(1), UINT64_MAX)},
             BF16V(SHAPE(1), 0x5f80));
    s_expect(GX_OP_CAST, CAST_TO(11), 1, (gx_view[]){BF16V(SHAPE(2), 0x3f80, 0xc0a0)},
             F64V(SHAPE(2), 1, -5));
    /* saturate (opset 19) is accepted */
    s_expect(GX_OP_CAST, NODE(A_INT("to", 1), A_INT("saturate", 0)), 1,
             (gx_view[]){I8V(SHAPE(1), -5)}, F32V(SHAPE(1), -5));
    s_expect(GX_OP_CAST_LIKE, NODE(A_INT("saturate", 1)), 2,
             (gx_view[]){F64V(SHAPE(2), 0.5, -1), F16V(SHAPE(1), 0)}, F16V(SHAPE(2), 0x3800, 0xbc00));
    s_run(GX_OP_CAST, CAST_TO(10), 1, (gx_view[]){RANDV(7, 131)});
}
END_TEST

/* Results below 2^-14 are float16 subnormals; gx_f32_to_f16 (ops/cpu/cpu.h)
 * must round them to nearest even like any other value. */
START_TEST(test_cast_f16_subnormal)
{
    s_expect(GX_OP_CAST, CAST_TO(10), 1,
             (gx_view[]){F32V(SHAPE(6), 6e-8f, 0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1p-15f, -3e-5f)},
             F16V(SHAPE(6), 1, 1, 0, 2, 0x200, 0x81f7));
    s_expect(GX_OP_CAST, CAST_TO(10), 1, (gx_view[]){F64V(SHAPE(2), 0x1p-24, 0x1.0000001p-25)},
             F16V(SHAPE(2), 1, 1));
}
END_TEST

START_TEST(test_cast_errors)
{
    gx_view x = F32V(SHAPE(1), 1);
    ot_expect_error(GX_OP_CAST, CAST_TO(17), 1, &x, GX_EDTYPE,
                    "Cast: to=17 (FLOAT8E4M3FN) is not supported");
    ot_expect_error(GX_OP_CAST, CAST_TO(14), 1, &x, GX_EDTYPE,
                    "Cast: to=14 (COMPLEX64) is not supported");
    ot_expect_error(GX_OP_CAST, CAST_TO(0), 1, &x, GX_EATTR, "Cast: to=0 is not an ONNX data type");
    ot_expect_error(GX_OP_CAST, CAST_TO(99), 1, &x, GX_EATTR,
                    "Cast: to=99 is not an ONNX data type");
    ot_expect_error(GX_OP_CAST, CAST_TO(-1), 1, &x, GX_EATTR,
                    "Cast: to=-1 is not an ONNX data type");
    ot_expect_error(GX_OP_CAST, NULL, 1, &x, GX_EATTR, "Cast: attribute 'to' is required");
    gx_view bad = x;
    bad.dtype = GX_DTYPE_COUNT;
    ot_expect_error(GX_OP_CAST, CAST_TO(1), 1, &bad, GX_EDTYPE,
                    "Cast: input 0 is unknown dtype, expected a gexec dtype");
}
END_TEST

/* ---- CumSum ---- */

static void s_check_cumsum_ref(gx_view x, int64_t axis, bool excl, bool rev)
{
    int ax = (int)(axis < 0 ? axis + x.ndim : axis);
    int64_t n = x.shape[ax], inner = 1, outer = 1;
    for (int d = 0; d < ax; d++)
        outer *= x.shape[d];
    for (int d = ax + 1; d < x.ndim; d++)
        inner *= x.shape[d];
    gx_view w = ot_view(GX_F32, ot_alloc((size_t)x.numel * 4), x.ndim, x.shape);
    const float *px = x.data;
    float *pw = w.data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            float acc = 0;
            for (int64_t j = 0; j < n; j++) {
                int64_t i = (o * n + (rev ? n - 1 - j : j)) * inner + c;
                if (excl) {
                    pw[i] = acc;
                    acc += px[i];
                } else {
                    acc += px[i];
                    pw[i] = acc;
                }
            }
        }
    }
    s_expect(GX_OP_CUMSUM,
             NODE(A_INT("exclusive", excl), A_INT("reverse", rev)), 2,
             (gx_view[]){x, I64V(SCALAR, axis)}, w);
}

START_TEST(test_cumsum)
{
    /* test_cumsum_1d and its exclusive / reverse variants (float64, int32 axis) */
    gx_view x = F64V(SHAPE(5), 1, 2, 3, 4, 5), a0 = I32V(SCALAR, 0);
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, a0}, F64V(SHAPE(5), 1, 3, 6, 10, 15));
    s_expect(GX_OP_CUMSUM, NODE(A_INT("exclusive", 1)), 2, (gx_view[]){x, a0},
             F64V(SHAPE(5), 0, 1, 3, 6, 10));
    s_expect(GX_OP_CUMSUM, NODE(A_INT("reverse", 1)), 2, (gx_view[]){x, a0},
             F64V(SHAPE(5), 15, 14, 12, 9, 5));
    s_expect(GX_OP_CUMSUM, NODE(A_INT("exclusive", 1), A_INT("reverse", 1)), 2, (gx_view[]){x, a0},
             F64V(SHAPE(5), 14, 12, 9, 5, 0));
    /* test_cumsum_2d_axis_0 / _1 / _negative_axis */
    gx_view m = F64V(SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){m, I32V(SCALAR, 0)},
             F64V(SHAPE(2, 3), 1, 2, 3, 5, 7, 9));
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){m, I64V(SHAPE(1), 1)},
             F64V(SHAPE(2, 3), 1, 3, 6, 4, 9, 15));
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){m, I32V(SCALAR, -1)},
             F64V(SHAPE(2, 3), 1, 3, 6, 4, 9, 15));
    /* integers wrap instead of overflowing */
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){I32V(SHAPE(3), INT32_MAX, 1, 1), a0},
             I32V(SHAPE(3), INT32_MAX, INT32_MIN, INT32_MIN + 1));
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){I8V(SHAPE(3), -100, -100, 50), a0},
             I8V(SHAPE(3), -100, 56, 106));
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){U64V(SHAPE(2), UINT64_MAX, 2), a0},
             U64V(SHAPE(2), UINT64_MAX, 1));
    /* float16 adds in float32 and rounds each output */
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){F16V(SHAPE(3), 0x3c00, 0x3800, 0xc000), a0},
             F16V(SHAPE(3), 0x3c00, 0x3e00, 0xb800));
    s_expect(GX_OP_CUMSUM, NULL, 2, (gx_view[]){BF16V(SHAPE(2), 0x3f80, 0x3f80), a0},
             BF16V(SHAPE(2), 0x3f80, 0x4000));
    /* inner dims wider than one block of columns, every variant */
    for (int v = 0; v < 4; v++) {
        s_check_cumsum_ref(RANDV(3, 5, 130), 1, v & 1, v & 2);
        s_check_cumsum_ref(RANDV(3, 5, 130), -3, v & 1, v & 2);
        s_check_cumsum_ref(RANDV(7, 150), 1, v & 1, v & 2);
    }
    s_check_cumsum_ref(RANDV(4, 0, 3), 1, false, false);
    s_check_cumsum_ref(RANDV(4, 0, 3), 2, false, true);
}
END_TEST

START_TEST(test_cumsum_errors)
{
    gx_view x = F32V(SHAPE(2, 2), 1, 2, 3, 4), out;
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, I64V(SCALAR, 2)}, GX_ESHAPE,
                    "CumSum: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, I64V(SCALAR, -3)}, GX_ESHAPE,
                    "CumSum: axis -3 is out of range for rank 2");
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, I64V(SHAPE(2), 0, 1)}, GX_ESHAPE,
                    "CumSum: axis (input 1) has shape [2], expected a scalar");
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, F32V(SCALAR, 0)}, GX_EDTYPE,
                    "CumSum: input 1 is float32, expected int32 or int64");
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){BOOLV(SHAPE(1), 1), I64V(SCALAR, 0)},
                    GX_EDTYPE, "CumSum: input 0 is bool, expected a numeric type");
    ot_expect_error(GX_OP_CUMSUM, NULL, 2, (gx_view[]){F32V(SCALAR, 1), I64V(SCALAR, 0)},
                    GX_ESHAPE, "CumSum: axis 0 is out of range for rank 0");
    /* an axis not known yet: the shape is, but the check waits for run time */
    ck_assert_int_eq(s_infer(GX_OP_CUMSUM, NULL, 2, (gx_view[]){x, s_unknown(I64V(SCALAR, 0))},
                             &out),
                     GX_INFER_DYNAMIC);
    ot_check_shape(&out, SHAPE(2, 2));
}
END_TEST

/* ---- Trilu ---- */

START_TEST(test_trilu)
{
    /* test_triu / test_tril with k = 0, 1, -1, out of range, and the
     * one-row and batched shapes */
    gx_view x = I64V(SHAPE(4, 5), 4, 7, 3, 7, 9, 1, 2, 8, 6, 9, 9, 4, 0, 8, 7, 4, 3, 4, 2, 4);
    const gx_node *lower = NODE(A_INT("upper", 0));
    s_expect(GX_OP_TRILU, NULL, 1, &x,
             I64V(SHAPE(4, 5), 4, 7, 3, 7, 9, 0, 2, 8, 6, 9, 0, 0, 0, 8, 7, 0, 0, 0, 2, 4));
    s_expect(GX_OP_TRILU, lower, 1, &x,
             I64V(SHAPE(4, 5), 4, 0, 0, 0, 0, 1, 2, 0, 0, 0, 9, 4, 0, 0, 0, 4, 3, 4, 2, 0));
    s_expect(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SCALAR, 1)},
             I64V(SHAPE(4, 5), 0, 7, 3, 7, 9, 0, 0, 8, 6, 9, 0, 0, 0, 8, 7, 0, 0, 0, 0, 4));
    s_expect(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SCALAR, -1)},
             I64V(SHAPE(4, 5), 4, 7, 3, 7, 9, 1, 2, 8, 6, 9, 0, 4, 0, 8, 7, 0, 0, 4, 2, 4));
    s_expect(GX_OP_TRILU, lower, 2, (gx_view[]){x, I64V(SCALAR, -1)},
             I64V(SHAPE(4, 5), 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9, 4, 0, 0, 0, 4, 3, 4, 0, 0));
    s_expect(GX_OP_TRILU, lower, 2, (gx_view[]){x, I64V(SHAPE(1), 2)},
             I64V(SHAPE(4, 5), 4, 7, 3, 0, 0, 1, 2, 8, 6, 0, 9, 4, 0, 8, 7, 4, 3, 4, 2, 4));
    gx_view zeros = I64V(SHAPE(4, 5), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    s_expect(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SCALAR, 6)}, zeros);
    s_expect(GX_OP_TRILU, lower, 2, (gx_view[]){x, I64V(SCALAR, -7)}, zeros);
    s_expect(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SCALAR, INT64_MAX)}, zeros);
    s_expect(GX_OP_TRILU, lower, 2, (gx_view[]){x, I64V(SCALAR, INT64_MIN)}, zeros);
    s_expect(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SCALAR, INT64_MIN)}, x);
    s_expect(GX_OP_TRILU, lower, 2, (gx_view[]){x, I64V(SCALAR, INT64_MAX)}, x);
    /* test_triu_one_row: [3,1,5], k = 1 */
    s_expect(GX_OP_TRILU, NULL, 2,
             (gx_view[]){U8V(SHAPE(3, 1, 5), 1, 4, 9, 7, 1, 4, 3, 3, 4, 2, 6, 5, 4, 9, 1),
                         I64V(SCALAR, 1)},
             U8V(SHAPE(3, 1, 5), 0, 4, 9, 7, 1, 0, 3, 3, 4, 2, 0, 5, 4, 9, 1));
    /* batched, float64 */
    s_expect(GX_OP_TRILU, lower, 1, (gx_view[]){F64V(SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8)},
             F64V(SHAPE(2, 2, 2), 1, 0, 3, 4, 5, 0, 7, 8));
    s_expect(GX_OP_TRILU, NULL, 1, (gx_view[]){s_empty(GX_F32, SHAPE(0, 3))}, s_empty(GX_F32, SHAPE(0, 3)));
    s_run(GX_OP_TRILU, lower, 2, (gx_view[]){RANDV(3, 17, 29), I64V(SCALAR, 3)});
    ot_expect_error(GX_OP_TRILU, NULL, 1, (gx_view[]){F32V(SHAPE(3), 1, 2, 3)}, GX_ESHAPE,
                    "Trilu: input has rank 1, expected at least 2");
    ot_expect_error(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I32V(SCALAR, 1)}, GX_EDTYPE,
                    "Trilu: input 1 is int32, expected int64");
    ot_expect_error(GX_OP_TRILU, NULL, 2, (gx_view[]){x, I64V(SHAPE(2), 1, 2)}, GX_ESHAPE,
                    "Trilu: k (input 1) has shape [2], expected a scalar");
}
END_TEST

/* ---- OneHot ---- */

START_TEST(test_one_hot)
{
    gx_view depth = F32V(SCALAR, 10), values = F32V(SHAPE(2), 1, 3);
    /* test_onehot_negative_indices */
    s_expect(GX_OP_ONE_HOT, NODE(A_INT("axis", 1)), 3,
             (gx_view[]){I64V(SHAPE(3), 0, -7, -8), depth, values},
             F32V(SHAPE(3, 10), 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3,
                  1, 1, 1, 1, 1, 1, 1));
    /* test_onehot_with_axis: float indices [[1, 9], [2, 4]], axis 1 -> [2,10,2];
     * with_negative_axis is the same with axis -2 */
    gx_view ind = F32V(SHAPE(2, 2), 1, 9, 2, 4);
    gx_view want = F32V(SHAPE(2, 10, 2), 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                        3, 1, 1, 1, 1, 3, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    s_expect(GX_OP_ONE_HOT, NODE(A_INT("axis", 1)), 3, (gx_view[]){ind, depth, values}, want);
    s_expect(GX_OP_ONE_HOT, NODE(A_INT("axis", -2)), 3, (gx_view[]){ind, depth, values}, want);
    /* test_onehot_without_axis: int32 values, depth 12; out-of-range
     * indices (and NaN, and a truncated -0.5 that becomes 0) */
    s_expect(GX_OP_ONE_HOT, NULL, 3,
             (gx_view[]){I64V(SHAPE(3), 0, 7, 8), F32V(SCALAR, 12), I32V(SHAPE(2), 2, 5)},
             I32V(SHAPE(3, 12), 5, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 2, 2, 2,
                  2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 2, 2, 2));
    s_expect(GX_OP_ONE_HOT, NULL, 3,
             (gx_view[]){F64V(SHAPE(5), 3, -4, NAN, -0.5, 1e30), I64V(SHAPE(1), 3),
                         U8V(SHAPE(2), 0, 1)},
             U8V(SHAPE(5, 3), 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0));
    s_expect(GX_OP_ONE_HOT, NODE(A_INT("axis", 0)), 3,
             (gx_view[]){U64V(SHAPE(3), UINT64_MAX, 1, 0), F64V(SHAPE(1), 2.9), BOOLV(SHAPE(2), 0, 1)},
             BOOLV(SHAPE(2, 3), 0, 0, 1, 0, 1, 0));
    s_expect(GX_OP_ONE_HOT, NULL, 3,
             (gx_view[]){I8V(SCALAR, -1), I32V(SCALAR, 4), F16V(SHAPE(2), 0, 0x3c00)},
             F16V(SHAPE(4), 0, 0, 0, 0x3c00));
    s_run(GX_OP_ONE_HOT, NODE(A_INT("axis", 1)), 3,
          (gx_view[]){I32V(SHAPE(3, 5), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, -2, -3, 40),
                      I64V(SCALAR, 37), I64V(SHAPE(2), -1, 1)});
}
END_TEST

START_TEST(test_one_hot_errors)
{
    gx_view ind = I64V(SHAPE(2), 0, 1), vals = F32V(SHAPE(2), 0, 1), out;
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){ind, F32V(SCALAR, 0), vals}, GX_ESHAPE,
                    "OneHot: depth 0 is not a positive integer");
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){ind, F32V(SCALAR, NAN), vals}, GX_ESHAPE,
                    "OneHot: depth nan is not a positive integer");
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){ind, I64V(SHAPE(2), 3, 3), vals},
                    GX_ESHAPE, "OneHot: depth (input 1) has shape [2], expected a scalar");
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){ind, I64V(SCALAR, 3), F32V(SHAPE(3), 0, 1, 2)},
                    GX_ESHAPE, "OneHot: values has shape [3], expected [2]");
    ot_expect_error(GX_OP_ONE_HOT, NODE(A_INT("axis", 2)), 3, (gx_view[]){ind, I64V(SCALAR, 3), vals},
                    GX_EATTR, "OneHot: axis 2 is out of range for output rank 2");
    ot_expect_error(GX_OP_ONE_HOT, NODE(A_INT("axis", -3)), 3,
                    (gx_view[]){ind, I64V(SCALAR, 3), vals}, GX_EATTR,
                    "OneHot: axis -3 is out of range for output rank 2");
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){BOOLV(SHAPE(1), 1), I64V(SCALAR, 3), vals},
                    GX_EDTYPE, "OneHot: input 0 is bool, expected a numeric type");
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3,
                    (gx_view[]){ind, I64V(SCALAR, INT64_MAX), vals}, GX_ESHAPE,
                    "OneHot: output shape [2,9223372036854775807] is too large");
    gx_view r8 = ot_view(GX_I64, ot_alloc(8), SHAPE(1, 1, 1, 1, 1, 1, 1, 1));
    ot_expect_error(GX_OP_ONE_HOT, NULL, 3, (gx_view[]){r8, I64V(SCALAR, 3), vals}, GX_ESHAPE,
                    "OneHot: output rank 9 is above 8");
    ck_assert_int_eq(s_infer(GX_OP_ONE_HOT, NULL, 3,
                             (gx_view[]){ind, s_unknown(I64V(SCALAR, 3)), vals}, &out),
                     GX_INFER_DYNAMIC);
}
END_TEST

/* ---- Range ---- */

START_TEST(test_range)
{
    /* test_range_float_type_positive_delta, test_range_int32_type_negative_delta */
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){F32V(SCALAR, 1), F32V(SCALAR, 5), F32V(SCALAR, 2)},
             F32V(SHAPE(2), 1, 3));
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){I32V(SCALAR, 10), I32V(SCALAR, 6), I32V(SCALAR, -3)},
             I32V(SHAPE(2), 10, 7));
    /* empty when delta points away from limit */
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){I64V(SCALAR, 1), I64V(SCALAR, 5), I64V(SCALAR, -1)},
             s_empty(GX_I64, SHAPE(0)));
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){F64V(SCALAR, 1), F64V(SCALAR, 1), F64V(SCALAR, 0.5)},
             s_empty(GX_F64, SHAPE(0)));
    /* the extremes of int64 and uint64 count exactly */
    s_expect(GX_OP_RANGE, NULL, 3,
             (gx_view[]){I64V(SCALAR, INT64_MIN), I64V(SCALAR, INT64_MAX), I64V(SCALAR, 1ll << 62)},
             I64V(SHAPE(4), INT64_MIN, -(1ll << 62), 0, 1ll << 62));
    s_expect(GX_OP_RANGE, NULL, 3,
             (gx_view[]){I64V(SCALAR, INT64_MAX), I64V(SCALAR, INT64_MIN), I64V(SCALAR, INT64_MIN)},
             I64V(SHAPE(2), INT64_MAX, -1));
    s_expect(GX_OP_RANGE, NULL, 3,
             (gx_view[]){U64V(SCALAR, UINT64_MAX - 5), U64V(SCALAR, UINT64_MAX), U64V(SCALAR, 2)},
             U64V(SHAPE(3), UINT64_MAX - 5, UINT64_MAX - 3, UINT64_MAX - 1));
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){U8V(SCALAR, 250), U8V(SCALAR, 255), U8V(SCALAR, 2)},
             U8V(SHAPE(3), 250, 252, 254));
    s_expect(GX_OP_RANGE, NULL, 3, (gx_view[]){I8V(SCALAR, -128), I8V(SCALAR, 127), I8V(SCALAR, 127)},
             I8V(SHAPE(3), -128, -1, 126));
    s_expect(GX_OP_RANGE, NULL, 3,
             (gx_view[]){F16V(SCALAR, 0x3c00), F16V(SCALAR, 0x4200), F16V(SCALAR, 0x3800)},
             F16V(SHAPE(4), 0x3c00, 0x3e00, 0x4000, 0x4100));
    s_expect(GX_OP_RANGE, NULL, 3,
             (gx_view[]){I16V(SHAPE(1), 0), I16V(SHAPE(1), 7), I16V(SHAPE(1), 3)},
             I16V(SHAPE(3), 0, 3, 6));
    gx_view big = s_run(GX_OP_RANGE, NULL, 3,
                        (gx_view[]){F32V(SCALAR, -1), F32V(SCALAR, 99.95f), F32V(SCALAR, 0.1f)});
    ck_assert_int_eq(big.numel, 1010);
    ck_assert_float_eq(((float *)big.data)[1009], (float)(-1.0 + 1009 * (double)0.1f));
}
END_TEST

START_TEST(test_range_errors)
{
    gx_view one = I32V(SCALAR, 1), out;
    ot_expect_error(GX_OP_RANGE, NULL, 3, (gx_view[]){one, one, I32V(SCALAR, 0)}, GX_ESHAPE,
                    "Range: delta is 0");
    ot_expect_error(GX_OP_RANGE, NULL, 3,
                    (gx_view[]){U16V(SCALAR, 1), U16V(SCALAR, 2), U16V(SCALAR, 0)}, GX_ESHAPE,
                    "Range: delta is 0");
    ot_expect_error(GX_OP_RANGE, NULL, 3, (gx_view[]){F32V(SCALAR, 0), F32V(SCALAR, 1), F32V(SCALAR, 0)},
                    GX_ESHAPE, "Range: delta is 0");
    ot_expect_error(GX_OP_RANGE, NULL, 3,
                    (gx_view[]){F32V(SCALAR, 0), F32V(SCALAR, INFINITY), F32V(SCALAR, 1)}, GX_ESHAPE,
                    "Range: start 0, limit inf, delta 1 do not give a length");
    ot_expect_error(GX_OP_RANGE, NULL, 3,
                    (gx_view[]){F64V(SCALAR, 0), F64V(SCALAR, 1e300), F64V(SCALAR, 1e-300)},
                    GX_ESHAPE, "Range: start 0, limit 1e+300, delta 1e-300 do not give a length");
    ot_expect_error(GX_OP_RANGE, NULL, 3,
                    (gx_view[]){U64V(SCALAR, 0), U64V(SCALAR, UINT64_MAX), U64V(SCALAR, 1)},
                    GX_ESHAPE, "Range: 18446744073709551615 elements are too many");
    ot_expect_error(GX_OP_RANGE, NULL, 3, (gx_view[]){one, I64V(SCALAR, 1), one}, GX_EDTYPE,
                    "Range: inputs 0 and 1 are int32 and int64, expected one dtype");
    ot_expect_error(GX_OP_RANGE, NULL, 3, (gx_view[]){one, I32V(SHAPE(2), 1, 2), one}, GX_ESHAPE,
                    "Range: limit (input 1) has shape [2], expected a scalar");
    ot_expect_error(GX_OP_RANGE, NULL, 3,
                    (gx_view[]){BOOLV(SCALAR, 0), BOOLV(SCALAR, 1), BOOLV(SCALAR, 1)}, GX_EDTYPE,
                    "Range: input 0 is bool, expected a numeric type");
    ck_assert_int_eq(s_infer(GX_OP_RANGE, NULL, 3, (gx_view[]){one, s_unknown(one), one}, &out),
                     GX_INFER_DYNAMIC);
    ck_assert_int_eq(out.dtype, GX_I32);
}
END_TEST

/* ---- EyeLike ---- */

START_TEST(test_eye_like)
{
    /* test_eyelike_without_dtype, _with_dtype, _populate_off_main_diagonal */
    s_expect(GX_OP_EYE_LIKE, NULL, 1, (gx_view[]){ot_rand(GX_I32, SHAPE(3, 3))},
             I32V(SHAPE(3, 3), 1, 0, 0, 0, 1, 0, 0, 0, 1));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 11)), 1, (gx_view[]){ot_rand(GX_I32, SHAPE(2, 3))},
             F64V(SHAPE(2, 3), 1, 0, 0, 0, 1, 0));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 1), A_INT("k", 1)), 1,
             (gx_view[]){ot_rand(GX_I32, SHAPE(3, 4))},
             F32V(SHAPE(3, 4), 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("k", -2)), 1, (gx_view[]){ot_rand(GX_F16, SHAPE(4, 2))},
             F16V(SHAPE(4, 2), 0, 0, 0, 0, 0x3c00, 0, 0, 0x3c00));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 16)), 1, (gx_view[]){ot_rand(GX_U8, SHAPE(2, 2))},
             BF16V(SHAPE(2, 2), 0x3f80, 0, 0, 0x3f80));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 9), A_INT("k", INT64_MAX)), 1,
             (gx_view[]){ot_rand(GX_U8, SHAPE(2, 2))}, BOOLV(SHAPE(2, 2), 0, 0, 0, 0));
    s_expect(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 13), A_INT("k", INT64_MIN)), 1,
             (gx_view[]){ot_rand(GX_U8, SHAPE(2, 1))}, U64V(SHAPE(2, 1), 0, 0));
    for (int dt = 0; dt < GX_STRING; dt++) {
        gx_view y = s_run(GX_OP_EYE_LIKE, NULL, 1, (gx_view[]){ot_rand((gx_dtype)dt, SHAPE(37, 70))});
        gx_view c = s_run(GX_OP_CAST, CAST_TO(1), 1, &y);
        for (int64_t i = 0; i < c.numel; i++)
            ck_assert_float_eq(((float *)c.data)[i], i / 70 == i % 70 ? 1.0f : 0.0f);
        ot_free_all();
    }
    ot_expect_error(GX_OP_EYE_LIKE, NULL, 1, (gx_view[]){RANDV(2, 2, 2)}, GX_ESHAPE,
                    "EyeLike: input has rank 3, expected 2");
    ot_expect_error(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 8)), 1, (gx_view[]){RANDV(2, 2)}, GX_EDTYPE,
                    "EyeLike: output 0 is a string tensor; EyeLike takes none");
    ot_expect_error(GX_OP_EYE_LIKE, NODE(A_INT("dtype", 42)), 1, (gx_view[]){RANDV(2, 2)}, GX_EATTR,
                    "EyeLike: dtype=42 is not an ONNX data type");
}
END_TEST

/* ---- NonZero ---- */

static void s_check_nonzero_ref(gx_view x)
{
    size_t es = gx_dtype_size(x.dtype);
    int nd = x.ndim > 0 ? x.ndim : 1;
    int64_t nnz = 0, idx[GX_MAX_DIMS];
    bool *nz = ot_alloc((size_t)x.numel);
    for (int64_t i = 0; i < x.numel; i++) {
        double f = 1; /* floats: -0.0 has a nonzero byte but is zero */
        if (x.dtype == GX_F32)
            f = ((float *)x.data)[i];
        else if (x.dtype == GX_F64)
            f = ((double *)x.data)[i];
        else if (x.dtype == GX_F16)
            f = gx_f16_to_f32(((uint16_t *)x.data)[i]);
        else if (x.dtype == GX_BF16)
            f = gx_bf16_to_f32(((uint16_t *)x.data)[i]);
        bool any = false;
        for (size_t b = 0; b < es; b++)
            any |= ((uint8_t *)x.data)[i * (int64_t)es + b] != 0;
        nz[i] = any && f != 0;
        nnz += nz[i];
    }
    gx_view w = ot_view(GX_I64, ot_alloc((size_t)(nd * nnz) * 8), SHAPE(nd, nnz));
    int64_t col = 0;
    for (int64_t i = 0; i < x.numel; i++) {
        if (!nz[i])
            continue;
        ot_unravel(i, x.ndim, x.shape, idx);
        for (int d = 0; d < nd; d++)
            ((int64_t *)w.data)[d * nnz + col] = x.ndim > 0 ? idx[d] : 0;
        col++;
    }
    s_expect(GX_OP_NONZERO, NULL, 1, &x, w);
}

START_TEST(test_nonzero)
{
    /* test_nonzero_example */
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){BOOLV(SHAPE(2, 2), 1, 0, 1, 1)},
             I64V(SHAPE(2, 3), 0, 1, 1, 0, 0, 1));
    /* -0.0 is zero, NaN is not */
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){F32V(SHAPE(4), -0.0f, NAN, 0, -1)},
             I64V(SHAPE(1, 2), 1, 3));
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){F16V(SHAPE(3), 0x8000, 1, 0)},
             I64V(SHAPE(1, 1), 1));
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){I64V(SCALAR, 5)}, I64V(SHAPE(1, 1), 0));
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){I64V(SCALAR, 0)}, s_empty(GX_I64, SHAPE(1, 0)));
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){U8V(SHAPE(2, 2), 0, 0, 0, 0)},
             s_empty(GX_I64, SHAPE(2, 0)));
    s_expect(GX_OP_NONZERO, NULL, 1, (gx_view[]){s_empty(GX_F32, SHAPE(3, 0))},
             s_empty(GX_I64, SHAPE(2, 0)));
    for (int dt = 0; dt < GX_STRING; dt++) {
        gx_view x = s_rand_few((gx_dtype)dt, SHAPE(3, 7, 61));
        for (int64_t i = 0; i < x.numel; i += 3) /* plenty of zeros */
            memset((char *)x.data + i * (int64_t)gx_dtype_size(x.dtype), 0, gx_dtype_size(x.dtype));
        s_check_nonzero_ref(x);
        ot_free_all();
    }
    gx_view out;
    ck_assert_int_eq(s_infer(GX_OP_NONZERO, NULL, 1, (gx_view[]){s_unknown(RANDV(2, 3))}, &out),
                     GX_INFER_DYNAMIC);
    ck_assert_int_eq(out.dtype, GX_I64);
}
END_TEST

/* ---- Compress ---- */

START_TEST(test_compress)
{
    gx_view x = F32V(SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    /* test_compress_0, _1, _default_axis, _negative_axis */
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 0)), 2, (gx_view[]){x, BOOLV(SHAPE(3), 0, 1, 1)},
             F32V(SHAPE(2, 2), 3, 4, 5, 6));
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2, (gx_view[]){x, BOOLV(SHAPE(2), 0, 1)},
             F32V(SHAPE(3, 1), 2, 4, 6));
    s_expect(GX_OP_COMPRESS, NULL, 2, (gx_view[]){x, BOOLV(SHAPE(5), 0, 1, 0, 0, 1)},
             F32V(SHAPE(2), 2, 5));
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", -1)), 2, (gx_view[]){x, BOOLV(SHAPE(2), 0, 1)},
             F32V(SHAPE(3, 1), 2, 4, 6));
    /* a shorter condition drops the rest; nothing selected */
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 0)), 2, (gx_view[]){x, BOOLV(SHAPE(1), 1)},
             F32V(SHAPE(1, 2), 1, 2));
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2, (gx_view[]){x, BOOLV(SHAPE(2), 0, 0)},
             s_empty(GX_F32, SHAPE(3, 0)));
    s_expect(GX_OP_COMPRESS, NULL, 2, (gx_view[]){x, s_empty(GX_BOOL, SHAPE(0))}, s_empty(GX_F32, SHAPE(0)));
    /* a middle axis, other dtypes */
    gx_view y = I16V(SHAPE(2, 3, 2), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2, (gx_view[]){y, BOOLV(SHAPE(3), 1, 0, 1)},
             I16V(SHAPE(2, 2, 2), 1, 2, 5, 6, 7, 8, 11, 12));
    /* larger: shares end mid-way through the selected slices */
    gx_view z = ot_rand(GX_F64, SHAPE(7, 50, 3));
    gx_view c = ot_rand(GX_BOOL, SHAPE(50));
    int64_t nsel = 0;
    for (int i = 0; i < 50; i++) {
        ((uint8_t *)c.data)[i] = i % 3 != 1;
        nsel += i % 3 != 1;
    }
    gx_view w = ot_view(GX_F64, ot_alloc((size_t)(7 * nsel * 3) * 8), SHAPE(7, nsel, 3));
    for (int64_t o = 0, r = 0; o < 7; o++)
        for (int64_t i = 0; i < 50; i++)
            if (i % 3 != 1)
                memcpy((double *)w.data + 3 * r++, (double *)z.data + (o * 50 + i) * 3, 24);
    s_expect(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2, (gx_view[]){z, c}, w);
}
END_TEST

START_TEST(test_compress_errors)
{
    gx_view x = F32V(SHAPE(3, 2), 1, 2, 3, 4, 5, 6), out;
    ot_expect_error(GX_OP_COMPRESS, NODE(A_INT("axis", 1)), 2,
                    (gx_view[]){x, BOOLV(SHAPE(3), 1, 1, 1)}, GX_ESHAPE,
                    "Compress: condition has 3 entries, more than the 2 slices along axis");
    ot_expect_error(GX_OP_COMPRESS, NULL, 2, (gx_view[]){x, ot_rand(GX_BOOL, SHAPE(7))}, GX_ESHAPE,
                    "Compress: condition has 7 entries, more than the 6 input elements");
    ot_expect_error(GX_OP_COMPRESS, NODE(A_INT("axis", 2)), 2, (gx_view[]){x, BOOLV(SHAPE(1), 1)},
                    GX_EATTR, "Compress: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_COMPRESS, NULL, 2, (gx_view[]){x, U8V(SHAPE(1), 1)}, GX_EDTYPE,
                    "Compress: input 1 is uint8, expected bool");
    ot_expect_error(GX_OP_COMPRESS, NULL, 2, (gx_view[]){x, BOOLV(SHAPE(1, 1), 1)}, GX_ESHAPE,
                    "Compress: condition has rank 2, expected 1");
    ck_assert_int_eq(s_infer(GX_OP_COMPRESS, NODE(A_INT("axis", 0)), 2,
                             (gx_view[]){x, s_unknown(BOOLV(SHAPE(2), 1, 1))}, &out),
                     GX_INFER_DYNAMIC);
    ck_assert_int_eq(out.dtype, GX_F32);
}
END_TEST

Suite *ops_logic_suite(void)
{
    Suite *s = suite_create("ops_logic");
    TCase *tc = tcase_create("logic");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_compare_hand);
    tcase_add_test(tc, test_compare_ref);
    tcase_add_test(tc, test_logical);
    tcase_add_test(tc, test_bit_shift);
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_isnan_isinf);
    tcase_add_test(tc, test_cast_all_pairs);
    tcase_add_test(tc, test_cast_edges);
    tcase_add_test(tc, test_cast_f16_subnormal);
    tcase_add_test(tc, test_cast_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("index");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cumsum);
    tcase_add_test(tc, test_cumsum_errors);
    tcase_add_test(tc, test_trilu);
    tcase_add_test(tc, test_one_hot);
    tcase_add_test(tc, test_one_hot_errors);
    tcase_add_test(tc, test_range);
    tcase_add_test(tc, test_range_errors);
    tcase_add_test(tc, test_eye_like);
    tcase_add_test(tc, test_nonzero);
    tcase_add_test(tc, test_compress);
    tcase_add_test(tc, test_compress_errors);
    suite_add_tcase(s, tc);
    return s;
}
