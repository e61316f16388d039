/*
 * Op tests of the shape family (GX_OPS_SHAPE in ops/op.h): hand values
 * (mostly the examples of the ONNX spec), naive references on random
 * inputs, each kernel split across threads (nth = 3 and 7 must give the
 * bytes nth = 1 gives, each byte written by one share), out-of-range
 * indices reaching a kernel, values not known yet (GX_INFER_DYNAMIC), and
 * the errors infer gives. Reshape, Transpose, Concat and Identity have
 * their references in check_ops.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

/* ---- literals ---- */

#define NVALS(T, ...) (int64_t)(sizeof((T[]){__VA_ARGS__}) / sizeof(T))
#define TYPEDV(dt, T, shape, ...)                                             \
    ot_view(dt, ot_copy((T[]){__VA_ARGS__}, sizeof((T[]){__VA_ARGS__})), shape)
/* (each written out: a SHAPE() passed on through another macro would
 * arrive as two arguments) */
#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)
#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)
/* A 1-D int64 vector of the values. */
#define IVEC(...)                                                             \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), 1, \
            (int64_t[]){NVALS(int64_t, __VA_ARGS__)})
#define ABSENT ((gx_view){.ndim = -1})
#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})
#define A_TENSOR(key, tp) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_TENSOR, .t = (tp)})
#define A_FLOATS(key, ...)                                                    \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOATS, .floats = (double[]){__VA_ARGS__}, \
               .n = sizeof((double[]){__VA_ARGS__}) / sizeof(double)})

static gx_view s_empty_i64(void)
{
    return ot_view(GX_I64, ot_alloc(8), SHAPE(0));
}

/* A tensor attribute value over v's data (test memory). */
static gx_tensor *s_tensor(gx_view v)
{
    gx_tensor *t = ot_alloc(sizeof *t);
    t->dtype = v.dtype;
    t->ndim = v.ndim;
    memcpy(t->shape, v.shape, sizeof t->shape);
    t->numel = v.numel;
    t->nbytes = (size_t)v.numel * gx_dtype_size(v.dtype);
    t->data = v.data;
    return t;
}

static size_t s_nbytes(const gx_view *v)
{
    return (size_t)v->numel * gx_dtype_size(v->dtype);
}

/* ---- running ---- */

/* Runs op with nth = 1 into out[0..n_out), then with nth = 3 and 7, which
 * must give the same bytes and tile the outputs. */
static void s_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                  gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    int rc = ot_run_n(op, node, n_in, in, 1, av, n_out, out, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    for (int nth = 3; nth <= 7; nth += 4) {
        gx_view o[GX_MAX_OP_INPUTS];
        ck_assert_int_eq(ot_run_n(op, node, n_in, in, nth, av, n_out, o, err), GX_OK);
        for (int i = 0; i < n_out; i++)
            ck_assert_msg(memcmp(o[i].data, out[i].data, s_nbytes(&out[i])) == 0,
                          "%s: output %d with nth=%d differs from nth=1", gx_op_name(op), i, nth);
        ot_check_shares(op, av, n_in, in, n_out, out, nth);
    }
}

static void s_same(const gx_view *got, gx_view want)
{
    ck_assert_int_eq(got->dtype, want.dtype);
    ot_check_shape(got, want.ndim, want.shape);
    ck_assert_msg(memcmp(got->data, want.data, s_nbytes(&want)) == 0, "values differ");
}

/* One output: it must be want, bit for bit (dtype and shape too). */
static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want)
{
    gx_view y;
    s_run(op, node, n_in, in, 1, &y);
    s_same(&y, want);
}

/* Infer must answer GX_INFER_DYNAMIC (a value input without data). */
static void s_expect_dynamic(gx_op op, const gx_node *node, int n_in, const gx_view *in)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[4];
    char err[ERRLEN] = "";
    ck_assert_int_eq(gx_op_resolve_attrs(op, node, av, err, sizeof err), GX_OK);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = sizeof err};
    int rc = gx_op_schema_get(op)->infer(&ic);
    ck_assert_msg(rc == GX_INFER_DYNAMIC, "%s: infer gave %d (%s)", gx_op_name(op), rc, err);
}

/* Runs a kernel whose index input `ind` held no data at infer time (as a
 * non-constant), so infer could not check it; the output with nth = 1 and
 * 3 must be want. */
static void s_expect_unchecked(gx_op op, const gx_node *node, int n_in, const gx_view *in,
                               int ind, gx_view want)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view blind[GX_MAX_OP_INPUTS], y;
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(op, node, av, err, sizeof err), GX_OK);
    memcpy(blind, in, sizeof blind[0] * (size_t)n_in);
    blind[ind].data = NULL;
    gx_infer ic = {.attr = av, .n_in = n_in, .in = blind, .n_out = 1, .out = &y, .err = err,
                   .errlen = sizeof err};
    ck_assert_int_eq(gx_op_schema_get(op)->infer(&ic), GX_OK);
    y.data = ot_alloc(s_nbytes(&y));
    for (int nth = 1; nth <= 3; nth += 2) {
        memset(y.data, 0xAB, s_nbytes(&y));
        gx_kargs k = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = &y, .nth = nth};
        for (k.ith = 0; k.ith < nth; k.ith++)
            gx_cpu_kernel(op)(&k);
        s_same(&y, want);
    }
}

/* ---- naive references ---- */

static int64_t s_ravel(int nd, const int64_t *shape, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < nd; d++)
        off = off * shape[d] + idx[d];
    return off;
}

static int64_t s_idx(const gx_view *v, int64_t i)
{
    return v->dtype == GX_I32 ? ((const int32_t *)v->data)[i] : ((const int64_t *)v->data)[i];
}

static float *s_f32(const gx_view *v)
{
    return v->data;
}

/* A float32 view of shape for a reference result. */
static gx_view s_ref_view(int nd, const int64_t *shape)
{
    gx_view v = ot_view(GX_F32, NULL, nd, shape);
    v.data = ot_alloc(s_nbytes(&v));
    return v;
}

/* Random indices in [-n, n) of shape (both signs). */
static gx_view s_rand_idx(gx_dtype dt, int nd, const int64_t *shape, int64_t n)
{
    gx_view v = ot_view(dt, NULL, nd, shape);
    v.data = ot_alloc(s_nbytes(&v));
    for (int64_t i = 0; i < v.numel; i++) {
        int64_t j = (int64_t)((ot_randf() + 2.0f) / 4.0f * (float)(2 * n)) - n;
        j = j < -n ? -n : j >= n ? n - 1 : j;
        if (dt == GX_I32)
            ((int32_t *)v.data)[i] = (int32_t)j;
        else
            ((int64_t *)v.data)[i] = j;
    }
    return v;
}

static gx_view s_ref_gather(const gx_view *x, const gx_view *ind, int axis)
{
    int64_t shape[GX_MAX_DIMS], yi[GX_MAX_DIMS], xi[GX_MAX_DIMS];
    const int q = ind->ndim, nd = x->ndim - 1 + q;
    for (int d = 0; d < nd; d++)
        shape[d] = d < axis ? x->shape[d] : d < axis + q ? ind->shape[d - axis]
                                                        : x->shape[d - q + 1];
    gx_view y = s_ref_view(nd, shape);
    for (int64_t i = 0; i < y.numel; i++) {
        ot_unravel(i, nd, shape, yi);
        for (int d = 0; d < x->ndim; d++)
            xi[d] = d < axis ? yi[d] : d > axis ? yi[d + q - 1] : 0;
        int64_t j = s_idx(ind, s_ravel(q, ind->shape, yi + axis));
        xi[axis] = j < 0 ? j + x->shape[axis] : j;
        s_f32(&y)[i] = s_f32(x)[s_ravel(x->ndim, x->shape, xi)];
    }
    return y;
}

static gx_view s_ref_gather_elements(const gx_view *x, const gx_view *ind, int axis)
{
    int64_t idx[GX_MAX_DIMS];
    gx_view y = s_ref_view(ind->ndim, ind->shape);
    for (int64_t i = 0; i < y.numel; i++) {
        ot_unravel(i, ind->ndim, ind->shape, idx);
        int64_t j = s_idx(ind, i);
        idx[axis] = j < 0 ? j + x->shape[axis] : j;
        s_f32(&y)[i] = s_f32(x)[s_ravel(x->ndim, x->shape, idx)];
    }
    return y;
}

/* x[idx] combined with u as reduction says. */
static float s_red(const char *red, float a, float b)
{
    if (strcmp(red, "add") == 0)
        return a + b;
    if (strcmp(red, "mul") == 0)
        return a * b;
    if (strcmp(red, "max") == 0)
        return a > b ? a : b;
    if (strcmp(red, "min") == 0)
        return a < b ? a : b;
    return b;
}

static gx_view s_ref_scatter_elements(const gx_view *x, const gx_view *ind, const gx_view *u,
                                      int axis, const char *red)
{
    int64_t idx[GX_MAX_DIMS];
    gx_view y = s_ref_view(x->ndim, x->shape);
    memcpy(y.data, x->data, s_nbytes(x));
    for (int64_t i = 0; i < ind->numel; i++) {
        ot_unravel(i, ind->ndim, ind->shape, idx);
        int64_t j = s_idx(ind, i);
        idx[axis] = j < 0 ? j + x->shape[axis] : j;
        float *t = &s_f32(&y)[s_ravel(x->ndim, x->shape, idx)];
        *t = s_red(red, *t, s_f32(u)[i]);
    }
    return y;
}

static gx_view s_ref_gather_nd(const gx_view *x, const gx_view *ind, int b)
{
    const int k = (int)ind->shape[ind->ndim - 1];
    int64_t shape[GX_MAX_DIMS], xi[GX_MAX_DIMS], yi[GX_MAX_DIMS];
    const int nd = ind->ndim - 1 + x->ndim - b - k;
    memcpy(shape, ind->shape, sizeof shape[0] * (size_t)(ind->ndim - 1));
    memcpy(shape + ind->ndim - 1, x->shape + b + k, sizeof shape[0] * (size_t)(x->ndim - b - k));
    gx_view y = s_ref_view(nd, shape);
    for (int64_t i = 0; i < y.numel; i++) {
        ot_unravel(i, nd, shape, yi);
        memcpy(xi, yi, sizeof xi[0] * (size_t)b);
        const int64_t tuple = s_ravel(ind->ndim - 1, ind->shape, yi);
        for (int j = 0; j < k; j++) {
            int64_t v = s_idx(ind, tuple * k + j);
            xi[b + j] = v < 0 ? v + x->shape[b + j] : v;
        }
        memcpy(xi + b + k, yi + ind->ndim - 1, sizeof xi[0] * (size_t)(x->ndim - b - k));
        s_f32(&y)[i] = s_f32(x)[s_ravel(x->ndim, x->shape, xi)];
    }
    return y;
}

static gx_view s_ref_scatter_nd(const gx_view *x, const gx_view *ind, const gx_view *u,
                                const char *red)
{
    const int k = (int)ind->shape[ind->ndim - 1];
    const int64_t slice = gx_shape_numel(x->ndim - k, x->shape + k, INT64_MAX);
    int64_t xi[GX_MAX_DIMS] = {0};
    gx_view y = s_ref_view(x->ndim, x->shape);
    memcpy(y.data, x->data, s_nbytes(x));
    for (int64_t t = 0; t < ind->numel / k; t++) {
        for (int j = 0; j < k; j++) {
            int64_t v = s_idx(ind, t * k + j);
            xi[j] = v < 0 ? v + x->shape[j] : v;
        }
        const int64_t base = s_ravel(k, x->shape, xi) * slice;
        for (int64_t e = 0; e < slice; e++)
            s_f32(&y)[base + e] = s_red(red, s_f32(&y)[base + e], s_f32(u)[t * slice + e]);
    }
    return y;
}

/* Python's slice(start, stop, step).indices(dim), then the positions it
 * enumerates: ONNX Slice's clamping, written the other way round. */
static int64_t s_py_slice(int64_t dim, int64_t start, int64_t stop, int64_t step, int64_t *pos)
{
    const int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? dim - 1 : dim;
    start = start < 0 ? start + dim : start;
    stop = stop < 0 ? stop + dim : stop;
    start = start < lower ? lower : start > upper ? upper : start;
    stop = stop < lower ? lower : stop > upper ? upper : stop;
    int64_t n = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        pos[n++] = i;
    return n;
}

/* Slice of x (rank <= 3, dims <= 16) along all three axes. */
static gx_view s_ref_slice3(const gx_view *x, const int64_t *starts, const int64_t *ends,
                            const int64_t *steps)
{
    int64_t pos[3][64], n[3];
    for (int d = 0; d < 3; d++)
        n[d] = s_py_slice(x->shape[d], starts[d], ends[d], steps[d], pos[d]);
    gx_view y = s_ref_view(3, n);
    int64_t i = 0;
    for (int64_t a = 0; a < n[0]; a++)
        for (int64_t b = 0; b < n[1]; b++)
            for (int64_t c = 0; c < n[2]; c++)
                s_f32(&y)[i++] = s_f32(x)[(pos[0][a] * x->shape[1] + pos[1][b]) * x->shape[2] +
                                          pos[2][c]];
    return y;
}

/* Tile and Expand: output element at index i reads x at i mod dim (Tile)
 * or at i where x's dim is > 1 (Expand, dims aligned from the right). */
static gx_view s_ref_tile_expand(const gx_view *x, int nd, const int64_t *shape, bool tile)
{
    int64_t yi[GX_MAX_DIMS], xi[GX_MAX_DIMS];
    gx_view y = s_ref_view(nd, shape);
    const int off = nd - x->ndim;
    for (int64_t i = 0; i < y.numel; i++) {
        ot_unravel(i, nd, shape, yi);
        for (int d = 0; d < x->ndim; d++)
            xi[d] = tile ? yi[d] % x->shape[d] : x->shape[d] == 1 ? 0 : yi[d + off];
        s_f32(&y)[i] = s_f32(x)[s_ravel(x->ndim, x->shape, xi)];
    }
    return y;
}

/* Transpose of x by perm, for any element size. */
static gx_view s_ref_transpose(const gx_view *x, const int64_t *perm)
{
    const size_t es = gx_dtype_size(x->dtype);
    int64_t shape[GX_MAX_DIMS], yi[GX_MAX_DIMS], xi[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->shape[perm[d]];
    gx_view y = ot_view(x->dtype, NULL, x->ndim, shape);
    y.data = ot_alloc(s_nbytes(&y));
    for (int64_t i = 0; i < y.numel; i++) {
        ot_unravel(i, y.ndim, shape, yi);
        for (int d = 0; d < x->ndim; d++)
            xi[perm[d]] = yi[d];
        memcpy((char *)y.data + (size_t)i * es,
               (const char *)x->data + (size_t)s_ravel(x->ndim, x->shape, xi) * es, es);
    }
    return y;
}

/* Large enough for the tiled path, with partial tiles, every element size. */
START_TEST(test_transpose_tiled)
{
    static const int64_t perms[][4] = {{0, 2, 1, 3}, {3, 1, 2, 0}, {0, 3, 1, 2},
                                       {2, 3, 0, 1}, {1, 0, 3, 2}, {3, 2, 1, 0}};
    const gx_dtype dts[] = {GX_U8, GX_F16, GX_F32, GX_F64};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        gx_view x = ot_rand(dts[t], SHAPE(3, 37, 18, 5));
        for (size_t p = 0; p < sizeof perms / sizeof perms[0]; p++) {
            const int64_t *q = perms[p];
            s_expect(GX_OP_TRANSPOSE, NODE(A_INTS("perm", q[0], q[1], q[2], q[3])), 1, &x,
                     s_ref_transpose(&x, q));
        }
    }
    gx_view m = RANDV(100, 67);
    s_expect(GX_OP_TRANSPOSE, NULL, 1, &m, s_ref_transpose(&m, (int64_t[]){1, 0}));
    /* whole 16 x 16 tiles of 4-byte elements (in registers on AVX-512),
     * with partial ones beside them */
    for (size_t t = 0; t < 2; t++) {
        gx_view b = ot_rand(t ? GX_I32 : GX_F32, SHAPE(2, 48, 35));
        s_expect(GX_OP_TRANSPOSE, NODE(A_INTS("perm", 0, 2, 1)), 1, &b,
                 s_ref_transpose(&b, (int64_t[]){0, 2, 1}));
    }
}
END_TEST

/* ---- copies: Flatten, Squeeze, Unsqueeze ---- */

/* op on a [2,3,4] float32 input must keep the data and give shape want. */
static void s_reshaped(gx_op op, const gx_node *node, int n_in, gx_view *in, int nd,
                       const int64_t *want)
{
    gx_view y;
    s_run(op, node, n_in, in, 1, &y);
    ot_check_shape(&y, nd, want);
    ck_assert_int_eq(y.dtype, in[0].dtype);
    ck_assert(memcmp(y.data, in[0].data, s_nbytes(&in[0])) == 0);
}

START_TEST(test_flatten)
{
    gx_view x = RANDV(2, 3, 4, 5);
    s_reshaped(GX_OP_FLATTEN, NULL, 1, &x, SHAPE(2, 60));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", 0)), 1, &x, SHAPE(1, 120));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", 3)), 1, &x, SHAPE(24, 5));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", 4)), 1, &x, SHAPE(120, 1));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", -1)), 1, &x, SHAPE(24, 5));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", -4)), 1, &x, SHAPE(1, 120));
    gx_view b = ot_rand(GX_BOOL, SHAPE(3, 0, 2));
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", 2)), 1, &b, SHAPE(0, 2));
    gx_view s = ot_rand(GX_I16, 0, NULL);
    s_reshaped(GX_OP_FLATTEN, NODE(A_INT("axis", 0)), 1, &s, SHAPE(1, 1));
    ot_expect_error(GX_OP_FLATTEN, NODE(A_INT("axis", 5)), 1, &x, GX_EATTR,
                    "Flatten: axis 5 is out of range for rank 4");
    ot_expect_error(GX_OP_FLATTEN, NODE(A_INT("axis", -5)), 1, &x, GX_EATTR,
                    "Flatten: axis -5 is out of range for rank 4");
}
END_TEST

START_TEST(test_squeeze)
{
    gx_view in[2] = {RANDV(1, 3, 1, 5), IVEC(0)};
    s_reshaped(GX_OP_SQUEEZE, NULL, 2, in, SHAPE(3, 1, 5));
    in[1] = IVEC(-2, 0);
    s_reshaped(GX_OP_SQUEEZE, NULL, 2, in, SHAPE(3, 5));
    s_reshaped(GX_OP_SQUEEZE, NULL, 1, in, SHAPE(3, 5)); /* no axes: every 1 */
    in[1] = ABSENT;
    s_reshaped(GX_OP_SQUEEZE, NULL, 2, in, SHAPE(3, 5));
    s_reshaped(GX_OP_SQUEEZE, NODE(A_INTS("axes", 2)), 1, in, SHAPE(1, 3, 5)); /* opset 11 */
    gx_view one = ot_rand(GX_U64, SHAPE(1, 1));
    s_reshaped(GX_OP_SQUEEZE, NULL, 1, &one, 0, NULL);

    in[1] = ot_view(GX_I64, NULL, SHAPE(1));
    s_expect_dynamic(GX_OP_SQUEEZE, NULL, 2, in);
    in[1] = IVEC(1);
    ot_expect_error(GX_OP_SQUEEZE, NULL, 2, in, GX_ESHAPE, "Squeeze: dim 1 has size 3, not 1");
    in[1] = IVEC(0, -4);
    ot_expect_error(GX_OP_SQUEEZE, NULL, 2, in, GX_EATTR, "Squeeze: axis -4 is repeated");
    in[1] = IVEC(4);
    ot_expect_error(GX_OP_SQUEEZE, NULL, 2, in, GX_EATTR,
                    "Squeeze: axis 4 is out of range for rank 4");
    ot_expect_error(GX_OP_SQUEEZE, NODE(A_INTS("axes", 0)), 2, in, GX_EATTR,
                    "Squeeze: axes given both as attribute and as input");
    in[1] = I32V(SHAPE(1), 0);
    ot_expect_error(GX_OP_SQUEEZE, NULL, 2, in, GX_EDTYPE,
                    "Squeeze: axes input is int32, expected int64");
    in[1] = I64V(SHAPE(1, 1), 0);
    ot_expect_error(GX_OP_SQUEEZE, NULL, 2, in, GX_ESHAPE,
                    "Squeeze: axes input has rank 2, expected 1");
}
END_TEST

START_TEST(test_unsqueeze)
{
    gx_view in[2] = {RANDV(3, 4, 5), IVEC(0)};
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, in, SHAPE(1, 3, 4, 5));
    in[1] = IVEC(3);
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, in, SHAPE(3, 4, 5, 1));
    in[1] = IVEC(5, 4, 2); /* unsorted */
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, in, SHAPE(3, 4, 1, 5, 1, 1));
    in[1] = IVEC(1, 4);
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, in, SHAPE(3, 1, 4, 5, 1));
    in[1] = IVEC(-2);
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, in, SHAPE(3, 4, 1, 5));
    s_reshaped(GX_OP_UNSQUEEZE, NODE(A_INTS("axes", 3)), 1, in, SHAPE(3, 4, 5, 1)); /* opset 11 */
    gx_view s[2] = {ot_rand(GX_I8, 0, NULL), IVEC(0, -1)};
    s_reshaped(GX_OP_UNSQUEEZE, NULL, 2, s, SHAPE(1, 1));

    in[1] = ot_view(GX_I64, NULL, SHAPE(2));
    s_expect_dynamic(GX_OP_UNSQUEEZE, NULL, 2, in);
    ot_expect_error(GX_OP_UNSQUEEZE, NULL, 1, in, GX_EATTR,
                    "Unsqueeze: axes are required (input 1, or the attribute before opset 13)");
    in[1] = IVEC(4);
    ot_expect_error(GX_OP_UNSQUEEZE, NULL, 2, in, GX_EATTR,
                    "Unsqueeze: axis 4 is out of range for rank 4");
    in[1] = IVEC(1, 1);
    ot_expect_error(GX_OP_UNSQUEEZE, NULL, 2, in, GX_EATTR, "Unsqueeze: axis 1 is repeated");
    in[1] = IVEC(0, 1, 2, 3, 4, 5);
    ot_expect_error(GX_OP_UNSQUEEZE, NULL, 2, in, GX_ESHAPE,
                    "Unsqueeze: output would have rank 9 (max 8)");
}
END_TEST

/* Reshape's value input may be unknown at compile time. */
START_TEST(test_reshape_dynamic)
{
    gx_view in[2] = {RANDV(2, 3, 4), ot_view(GX_I64, NULL, SHAPE(2))};
    s_expect_dynamic(GX_OP_RESHAPE, NULL, 2, in);
    in[1] = I64V(SHAPE(2), 0, -1);
    s_reshaped(GX_OP_RESHAPE, NULL, 2, in, SHAPE(2, 12));
    gx_view z[2] = {RANDV(0, 3, 4), IVEC(3, 4, 0)};
    s_reshaped(GX_OP_RESHAPE, NODE(A_INT("allowzero", 1)), 2, z, SHAPE(3, 4, 0));
}
END_TEST

/* ---- Split ---- */

/* Concat of Split's outputs along axis gives the input back. */
static void s_split_roundtrip(const gx_node *node, int n_in, const gx_view *in, int n_out,
                              int64_t axis)
{
    gx_view y[8];
    s_run(GX_OP_SPLIT, node, n_in, in, n_out, y);
    gx_view back;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_CONCAT, NODE(A_INT("axis", axis)), n_out, y, 1, av, &back, err),
                     GX_OK);
    s_same(&back, in[0]);
}

/* Split with n_out outputs must fail with msg. */
static void s_split_error(int n_in, const gx_view *in, int n_out, const char *msg)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view y[8];
    char err[ERRLEN];
    ck_assert_int_lt(ot_run_n(GX_OP_SPLIT, NULL, n_in, in, 1, av, n_out, y, err), 0);
    ck_assert_str_eq(err, msg);
}

START_TEST(test_split)
{
    gx_view x = F32V(SHAPE(6), 1, 2, 3, 4, 5, 6), y[4];
    s_run(GX_OP_SPLIT, NULL, 1, &x, 3, y);
    s_same(&y[0], F32V(SHAPE(2), 1, 2));
    s_same(&y[1], F32V(SHAPE(2), 3, 4));
    s_same(&y[2], F32V(SHAPE(2), 5, 6));
    gx_view in[2] = {x, IVEC(2, 4)};
    s_run(GX_OP_SPLIT, NODE(A_INT("axis", 0)), 2, in, 2, y);
    s_same(&y[0], F32V(SHAPE(2), 1, 2));
    s_same(&y[1], F32V(SHAPE(4), 3, 4, 5, 6));
    s_run(GX_OP_SPLIT, NODE(A_INTS("split", 1, 5)), 1, in, 2, y); /* opset 11 */
    s_same(&y[1], F32V(SHAPE(5), 2, 3, 4, 5, 6));
    gx_view x7 = F32V(SHAPE(7), 1, 2, 3, 4, 5, 6, 7); /* opset 18: last chunk smaller */
    s_run(GX_OP_SPLIT, NODE(A_INT("num_outputs", 4)), 1, &x7, 4, y);
    s_same(&y[0], F32V(SHAPE(2), 1, 2));
    s_same(&y[3], F32V(SHAPE(1), 7));
    s_run(GX_OP_SPLIT, NULL, 1, &x7, 3, y);
    s_same(&y[2], F32V(SHAPE(1), 7));
    gx_view x2 = F32V(SHAPE(2, 6), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    s_run(GX_OP_SPLIT, NODE(A_INT("axis", 1)), 1, &x2, 2, y);
    s_same(&y[0], F32V(SHAPE(2, 3), 1, 2, 3, 7, 8, 9));
    s_same(&y[1], F32V(SHAPE(2, 3), 4, 5, 6, 10, 11, 12));
    gx_view zero[2] = {RANDV(0), IVEC(0, 0, 0)};
    s_run(GX_OP_SPLIT, NULL, 2, zero, 3, y);
    ot_check_shape(&y[2], SHAPE(0));

    gx_view r[2] = {ot_rand(GX_F16, SHAPE(5, 37, 3)), IVEC(10, 0, 27)};
    s_split_roundtrip(NODE(A_INT("axis", 1)), 2, r, 3, 1);
    r[1] = IVEC(1, 3, 1);
    s_split_roundtrip(NODE(A_INT("axis", -3)), 2, r, 3, 0);
    s_split_roundtrip(NODE(A_INT("axis", 2)), 1, r, 3, 2);
    s_split_roundtrip(NODE(A_INT("axis", 1), A_INT("num_outputs", 5)), 1, r, 5, 1);

    in[1] = ot_view(GX_I64, NULL, SHAPE(2));
    s_expect_dynamic(GX_OP_SPLIT, NULL, 2, in);
    in[1] = IVEC(2, 3);
    s_split_error(2, in, 2, "Split: split sums to 5, not the dim of 6");
    in[1] = IVEC(2, 5);
    s_split_error(2, in, 2, "Split: split sums past the dim of 6");
    in[1] = IVEC(7, -1);
    s_split_error(2, in, 2, "Split: split sums past the dim of 6");
    in[1] = IVEC(-1, 7);
    s_split_error(2, in, 2, "Split: split[0] is -1");
    in[1] = IVEC(1, 2, 3);
    ot_expect_error(GX_OP_SPLIT, NULL, 2, in, GX_EATTR,
                    "Split: split has 3 parts but the node has 1 outputs");
    ot_expect_error(GX_OP_SPLIT, NODE(A_INTS("split", 6)), 2, in, GX_EATTR,
                    "Split: split given both as attribute and as input");
    ot_expect_error(GX_OP_SPLIT, NODE(A_INTS("split", 6), A_INT("num_outputs", 1)), 1, in,
                    GX_EATTR, "Split: split and num_outputs are exclusive");
    ot_expect_error(GX_OP_SPLIT, NODE(A_INT("num_outputs", 2)), 1, in, GX_EATTR,
                    "Split: num_outputs asks for 2 parts but the node has 1 outputs");
    ot_expect_error(GX_OP_SPLIT, NODE(A_INT("axis", 1)), 1, in, GX_EATTR,
                    "Split: axis 1 is out of range for rank 1");
    gx_view s = RANDV(1);
    s.ndim = 0;
    ot_expect_error(GX_OP_SPLIT, NULL, 1, &s, GX_ESHAPE,
                    "Split: input is a scalar; rank >= 1 needed");
    /* 5 into 4 chunks of 2 leaves -1 for the last */
    s_split_error(1, (gx_view[]){RANDV(5)}, 4, "Split: a dim of 5 does not cut into 4 chunks");
}
END_TEST

/* ---- Slice ---- */

START_TEST(test_slice_hand)
{
    gx_view x = F32V(SHAPE(2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    s_expect(GX_OP_SLICE, NULL, 5, (gx_view[]){x, IVEC(1, 0), IVEC(2, 3), IVEC(0, 1), IVEC(1, 2)},
             F32V(SHAPE(1, 2), 5, 7));
    s_expect(GX_OP_SLICE, NULL, 3, (gx_view[]){x, IVEC(0, 1), IVEC(-1, 1000)},
             F32V(SHAPE(1, 3), 2, 3, 4));
    /* int32 arguments, negative steps, omitted axes with given steps */
    s_expect(GX_OP_SLICE, NULL, 5,
             (gx_view[]){x, I32V(SHAPE(1), -1), I32V(SHAPE(1), -1000), ABSENT,
                         I32V(SHAPE(1), -1)},
             F32V(SHAPE(2, 4), 5, 6, 7, 8, 1, 2, 3, 4));
    s_expect(GX_OP_SLICE, NULL, 5, (gx_view[]){x, IVEC(20), IVEC(0), IVEC(1), IVEC(-3)},
             F32V(SHAPE(2, 1), 4, 8));
    s_expect(GX_OP_SLICE, NULL, 4, (gx_view[]){x, IVEC(1000), IVEC(1000), IVEC(-1)},
             F32V(SHAPE(2, 0), 0));
    s_expect(GX_OP_SLICE, NULL, 5,
             (gx_view[]){x, IVEC(INT64_MAX), IVEC(INT64_MIN), IVEC(1), IVEC(INT64_MIN)},
             F32V(SHAPE(2, 1), 4, 8));
    s_expect(GX_OP_SLICE, NULL, 5,
             (gx_view[]){x, IVEC(0), IVEC(INT64_MAX), IVEC(1), IVEC(INT64_MAX)},
             F32V(SHAPE(2, 1), 1, 5));
    /* opset 1: attributes */
    s_expect(GX_OP_SLICE, NODE(A_INTS("starts", 1), A_INTS("ends", 3), A_INTS("axes", 1)), 1, &x,
             F32V(SHAPE(2, 2), 2, 3, 6, 7));
    s_expect(GX_OP_SLICE, NODE(A_INTS("starts", 1, 0), A_INTS("ends", 2, -1)), 1, &x,
             F32V(SHAPE(1, 3), 5, 6, 7));
}
END_TEST

START_TEST(test_slice_ref)
{
    static const int64_t cases[][9] = {
        /* starts, ends, steps per axis of a [9, 7, 16] input */
        {0, 0, 0, 9, 7, 16, 1, 1, 1},     {1, 2, 3, 8, 6, 15, 1, 1, 1},
        {-1, -1, -1, -10, -8, -17, -1, -1, -1}, {8, 6, 15, 0, 0, 0, -2, -3, -4},
        {2, 0, 5, 7, 7, 6, 3, 1, 1},      {-100, 3, 100, 100, 3, -100, 2, 1, -5},
        {0, 1, 0, 9, 2, 16, 1, 1, 2},     {5, 0, 0, 4, 7, 16, 1, 1, 1},
        {0, 6, -1, 9, -100, 0, 4, -1, -1},
    };
    gx_view x = RANDV(9, 7, 16);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t *v = cases[c];
        gx_view want = s_ref_slice3(&x, v, v + 3, v + 6);
        s_expect(GX_OP_SLICE, NULL, 5,
                 (gx_view[]){x, IVEC(v[0], v[1], v[2]), IVEC(v[3], v[4], v[5]), IVEC(0, 1, 2),
                             IVEC(v[6], v[7], v[8])},
                 want);
        /* the same with the axes listed backwards */
        s_expect(GX_OP_SLICE, NULL, 5,
                 (gx_view[]){x, IVEC(v[2], v[1], v[0]), IVEC(v[5], v[4], v[3]), IVEC(-1, 1, 0),
                             IVEC(v[8], v[7], v[6])},
                 want);
    }
    /* any dtype */
    gx_view b = ot_rand(GX_I64, SHAPE(5, 6));
    gx_view y;
    s_run(GX_OP_SLICE, NULL, 5, (gx_view[]){b, IVEC(4, 1), IVEC(-6, 6), IVEC(0, 1), IVEC(-2, 2)},
          1, &y);
    ot_check_shape(&y, SHAPE(3, 3));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            ck_assert(((int64_t *)y.data)[i * 3 + j] ==
                      ((int64_t *)b.data)[(4 - 2 * i) * 6 + 1 + 2 * j]);
}
END_TEST

START_TEST(test_slice_errors)
{
    gx_view x = RANDV(2, 4), unknown = ot_view(GX_I64, NULL, SHAPE(1));
    s_expect_dynamic(GX_OP_SLICE, NULL, 3, (gx_view[]){x, unknown, IVEC(1)});
    s_expect_dynamic(GX_OP_SLICE, NULL, 5, (gx_view[]){x, IVEC(0), IVEC(1), IVEC(0), unknown});
    ot_expect_error(GX_OP_SLICE, NULL, 2, (gx_view[]){x, IVEC(0)}, GX_ESHAPE,
                    "Slice: inputs starts and ends are required");
    ot_expect_error(GX_OP_SLICE, NULL, 3, (gx_view[]){x, IVEC(0), IVEC(1, 2)}, GX_ESHAPE,
                    "Slice: ends has 2 entries but starts has 1");
    ot_expect_error(GX_OP_SLICE, NULL, 3, (gx_view[]){x, IVEC(0, 0, 0), IVEC(1, 1, 1)}, GX_ESHAPE,
                    "Slice: 3 starts for rank 2");
    ot_expect_error(GX_OP_SLICE, NULL, 4, (gx_view[]){x, IVEC(0, 0), IVEC(1, 1), IVEC(1, -1)},
                    GX_EATTR, "Slice: axis -1 is repeated");
    ot_expect_error(GX_OP_SLICE, NULL, 4, (gx_view[]){x, IVEC(0), IVEC(1), IVEC(2)}, GX_EATTR,
                    "Slice: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_SLICE, NULL, 5, (gx_view[]){x, IVEC(0), IVEC(1), IVEC(1), IVEC(0)},
                    GX_EINVAL, "Slice: step of axis 1 is 0");
    ot_expect_error(GX_OP_SLICE, NULL, 3,
                    (gx_view[]){x, ot_rand(GX_F32, SHAPE(1)), IVEC(1)}, GX_EDTYPE,
                    "Slice: starts input is float32, expected int64 or int32");
    ot_expect_error(GX_OP_SLICE, NODE(A_INTS("starts", 0), A_INTS("ends", 1)), 3,
                    (gx_view[]){x, IVEC(0), IVEC(1)}, GX_EATTR,
                    "Slice: starts/ends given both as attributes and as inputs");
    ot_expect_error(GX_OP_SLICE, NODE(A_INTS("starts", 0), A_INTS("ends", 1, 2)), 1, &x, GX_EATTR,
                    "Slice: attributes starts, ends (and axes) must have one length");
    ot_expect_error(GX_OP_SLICE, NODE(A_INTS("ends", 1)), 1, &x, GX_EATTR,
                    "Slice: attributes starts, ends (and axes) must have one length");
}
END_TEST

/* ---- Gather, GatherElements, GatherND ---- */

START_TEST(test_gather)
{
    gx_view d = F32V(SHAPE(3, 2), 1, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f);
    s_expect(GX_OP_GATHER, NULL, 2, (gx_view[]){d, I64V(SHAPE(2, 2), 0, 1, 1, 2)},
             F32V(SHAPE(2, 2, 2), 1, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f));
    gx_view d3 = F32V(SHAPE(3, 3), 1, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f);
    s_expect(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, (gx_view[]){d3, I32V(SHAPE(1, 2), 0, 2)},
             F32V(SHAPE(3, 1, 2), 1, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f));
    s_expect(GX_OP_GATHER, NULL, 2, (gx_view[]){d3, IVEC(-1, -3)},
             F32V(SHAPE(2, 3), 4.5f, 5.7f, 5.9f, 1, 1.2f, 1.9f));
    /* a scalar index drops the axis */
    s_expect(GX_OP_GATHER, NODE(A_INT("axis", -1)), 2,
             (gx_view[]){d3, ot_view(GX_I64, ot_copy(&(int64_t){1}, 8), 0, NULL)},
             F32V(SHAPE(3), 1.2f, 3.4f, 5.7f));

    static const int64_t shapes[][4] = {{3, 5, 4, 3}, {2, 1, 7, 33}, {1, 1000, 1, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gx_view x = ot_rand(GX_F32, 4, shapes[s]);
        for (int axis = 0; axis < 4; axis++) {
            gx_view ind = s_rand_idx(axis % 2 ? GX_I32 : GX_I64, SHAPE(2, 3), shapes[s][axis]);
            s_expect(GX_OP_GATHER, NODE(A_INT("axis", axis)), 2, (gx_view[]){x, ind},
                     s_ref_gather(&x, &ind, axis));
        }
    }
    gx_view x = RANDV(40, 3);
    gx_view many = s_rand_idx(GX_I64, SHAPE(300), 40);
    s_expect(GX_OP_GATHER, NULL, 2, (gx_view[]){x, many}, s_ref_gather(&x, &many, 0));
    gx_view last = s_rand_idx(GX_I64, SHAPE(30, 7), 3);
    s_expect(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, (gx_view[]){x, last},
             s_ref_gather(&x, &last, 1));
    /* any element size */
    const gx_dtype dts[] = {GX_U8, GX_F16, GX_I32, GX_F64};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        gx_view t = ot_rand(dts[i], SHAPE(5, 6)), y;
        s_run(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, (gx_view[]){t, IVEC(5, 0, -1)}, 1, &y);
        const size_t es = gx_dtype_size(dts[i]);
        for (int r = 0; r < 5; r++) {
            ck_assert(memcmp((char *)y.data + (size_t)(r * 3) * es,
                             (char *)t.data + (size_t)(r * 6 + 5) * es, es) == 0);
            ck_assert(memcmp((char *)y.data + (size_t)(r * 3 + 1) * es,
                             (char *)t.data + (size_t)(r * 6) * es, es) == 0);
        }
    }
    /* no indices at all */
    s_expect(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, (gx_view[]){d, s_empty_i64()},
             F32V(SHAPE(3, 0), 0));
    s_expect(GX_OP_GATHER, NULL, 2, (gx_view[]){d, s_empty_i64()}, F32V(SHAPE(0, 2), 0));
    /* out-of-range indices that infer could not see read as zeros */
    s_expect_unchecked(GX_OP_GATHER, NULL, 2, (gx_view[]){d, IVEC(2, 3, -4, -3)}, 1,
                       F32V(SHAPE(4, 2), 4.5f, 5.7f, 0, 0, 0, 0, 1, 1.2f));
    s_expect_unchecked(GX_OP_GATHER, NODE(A_INT("axis", 1)), 2, (gx_view[]){d, IVEC(7, 1)}, 1,
                       F32V(SHAPE(3, 2), 0, 1.2f, 0, 3.4f, 0, 5.7f));
    s_expect_unchecked(GX_OP_GATHER, NULL, 2, (gx_view[]){RANDV(0, 2), IVEC(0)}, 1,
                       F32V(SHAPE(1, 2), 0, 0));

    ot_expect_error(GX_OP_GATHER, NULL, 2, (gx_view[]){d, IVEC(0, 3)}, GX_EINVAL,
                    "Gather: index 3 is out of range for a dim of 3");
    ot_expect_error(GX_OP_GATHER, NULL, 2, (gx_view[]){d, IVEC(-4)}, GX_EINVAL,
                    "Gather: index -4 is out of range for a dim of 3");
    ot_expect_error(GX_OP_GATHER, NODE(A_INT("axis", 2)), 2, (gx_view[]){d, IVEC(0)}, GX_EATTR,
                    "Gather: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_GATHER, NULL, 2, (gx_view[]){d, RANDV(1)}, GX_EDTYPE,
                    "Gather: indices are float32, expected int64 or int32");
    ot_expect_error(GX_OP_GATHER, NULL, 2,
                    (gx_view[]){RANDV(2, 2, 2, 2, 2), ot_rand(GX_I64, SHAPE(1, 1, 1, 1, 1))},
                    GX_ESHAPE, "Gather: output would have rank 9 (max 8)");
}
END_TEST

START_TEST(test_gather_elements)
{
    s_expect(GX_OP_GATHER_ELEMENTS, NODE(A_INT("axis", 1)), 2,
             (gx_view[]){F32V(SHAPE(2, 2), 1, 2, 3, 4), I64V(SHAPE(2, 2), 0, 0, 1, 0)},
             F32V(SHAPE(2, 2), 1, 1, 4, 3));
    gx_view d = F32V(SHAPE(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    s_expect(GX_OP_GATHER_ELEMENTS, NULL, 2, (gx_view[]){d, I64V(SHAPE(2, 3), 1, 2, 0, 2, 0, 0)},
             F32V(SHAPE(2, 3), 4, 8, 3, 7, 2, 3));
    s_expect(GX_OP_GATHER_ELEMENTS, NULL, 2,
             (gx_view[]){d, I32V(SHAPE(2, 3), -1, -2, 0, -2, 0, 0)},
             F32V(SHAPE(2, 3), 7, 5, 3, 4, 2, 3));
    gx_view x = RANDV(4, 9, 17);
    for (int axis = 0; axis < 3; axis++) {
        int64_t shape[3] = {3, 8, 17};
        shape[axis] = 23;
        gx_view ind = s_rand_idx(GX_I64, 3, shape, x.shape[axis]);
        s_expect(GX_OP_GATHER_ELEMENTS, NODE(A_INT("axis", axis - 3)), 2, (gx_view[]){x, ind},
                 s_ref_gather_elements(&x, &ind, axis));
    }
    gx_view h = ot_rand(GX_F16, SHAPE(3, 3)), y;
    s_run(GX_OP_GATHER_ELEMENTS, NODE(A_INT("axis", 1)), 2,
          (gx_view[]){h, I64V(SHAPE(3, 1), 2, 1, 0)}, 1, &y);
    for (int r = 0; r < 3; r++)
        ck_assert(((uint16_t *)y.data)[r] == ((uint16_t *)h.data)[r * 3 + 2 - r]);
    s_expect_unchecked(GX_OP_GATHER_ELEMENTS, NULL, 2,
                       (gx_view[]){d, I64V(SHAPE(1, 3), 3, -4, 1)}, 1,
                       F32V(SHAPE(1, 3), 0, 0, 6));

    ot_expect_error(GX_OP_GATHER_ELEMENTS, NULL, 2, (gx_view[]){d, I64V(SHAPE(1, 3), 0, 3, 0)},
                    GX_EINVAL, "GatherElements: index 3 is out of range for a dim of 3");
    ot_expect_error(GX_OP_GATHER_ELEMENTS, NULL, 2, (gx_view[]){d, IVEC(0)}, GX_ESHAPE,
                    "GatherElements: indices [1] do not fit data [3,3] (same rank, no larger off "
                    "axis 0)");
    ot_expect_error(GX_OP_GATHER_ELEMENTS, NULL, 2, (gx_view[]){d, ot_rand(GX_I64, SHAPE(1, 4))},
                    GX_ESHAPE,
                    "GatherElements: indices [1,4] do not fit data [3,3] (same rank, no larger "
                    "off axis 0)");
}
END_TEST

START_TEST(test_gather_nd)
{
    gx_view d2 = TYPEDV(GX_I32, int32_t, SHAPE(2, 2), 0, 1, 2, 3);
    s_expect(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d2, I64V(SHAPE(2, 2), 0, 0, 1, 1)},
             TYPEDV(GX_I32, int32_t, SHAPE(2), 0, 3));
    s_expect(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d2, I64V(SHAPE(2, 1), 1, 0)},
             TYPEDV(GX_I32, int32_t, SHAPE(2, 2), 2, 3, 0, 1));
    gx_view d3 = F32V(SHAPE(2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7);
    s_expect(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, I64V(SHAPE(2, 2), 0, 1, 1, 0)},
             F32V(SHAPE(2, 2), 2, 3, 4, 5));
    s_expect(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, I64V(SHAPE(2, 1, 2), 0, 1, 1, 0)},
             F32V(SHAPE(2, 1, 2), 2, 3, 4, 5));
    s_expect(GX_OP_GATHER_ND, NODE(A_INT("batch_dims", 1)), 2,
             (gx_view[]){d3, I64V(SHAPE(2, 1), 1, 0)}, F32V(SHAPE(2, 2), 2, 3, 4, 5));
    s_expect(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, I64V(SHAPE(1, 3), -1, -2, 1)},
             F32V(SHAPE(1), 5));

    gx_view x = RANDV(3, 5, 4, 6);
    for (int b = 0; b < 3; b++) {
        for (int k = 1; k <= 4 - b; k++) {
            /* the first b dims are the batch; the others are the indices' own */
            int64_t shape[4] = {3, b == 1 ? 2 : 5, 7, k};
            gx_view ind = ot_view(GX_I64, NULL, 4, shape);
            ind.data = ot_alloc(s_nbytes(&ind));
            for (int64_t i = 0; i < ind.numel; i++) {
                const int64_t n = x.shape[b + i % k];
                ((int64_t *)ind.data)[i] = (int64_t)((ot_randf() + 2.0f) / 4.0f * (float)n) % n;
            }
            s_expect(GX_OP_GATHER_ND, NODE(A_INT("batch_dims", b)), 2, (gx_view[]){x, ind},
                     s_ref_gather_nd(&x, &ind, b));
        }
    }
    s_expect_unchecked(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, I64V(SHAPE(2, 2), 0, 2, -2, 1)}, 1,
                       F32V(SHAPE(2, 2), 0, 0, 2, 3));

    ot_expect_error(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, I64V(SHAPE(1, 2), 0, 2)}, GX_EINVAL,
                    "GatherND: index 2 is out of range for a dim of 2");
    ot_expect_error(GX_OP_GATHER_ND, NULL, 2, (gx_view[]){d3, ot_rand(GX_I64, SHAPE(1, 4))},
                    GX_ESHAPE,
                    "GatherND: indices [1,4] index 4 dims of data [2,2,2] (1 to 3 allowed)");
    ot_expect_error(GX_OP_GATHER_ND, NODE(A_INT("batch_dims", 1)), 2,
                    (gx_view[]){d3, ot_rand(GX_I64, SHAPE(3, 1))}, GX_ESHAPE,
                    "GatherND: the 1 batch dims of data [2,2,2] and indices [3,1] differ");
    ot_expect_error(GX_OP_GATHER_ND, NODE(A_INT("batch_dims", 2)), 2,
                    (gx_view[]){d3, ot_rand(GX_I64, SHAPE(2, 1))}, GX_EATTR,
                    "GatherND: batch_dims 2 must be below both ranks (3, 2)");
}
END_TEST

/* ---- ScatterElements, Scatter, ScatterND ---- */

START_TEST(test_scatter_elements)
{
    gx_view z = F32V(SHAPE(3, 3), 0, 0, 0, 0, 0, 0, 0, 0, 0);
    gx_view in[3] = {z, I64V(SHAPE(2, 3), 1, 0, 2, 0, 2, 1),
                     F32V(SHAPE(2, 3), 1, 1.1f, 1.2f, 2, 2.1f, 2.2f)};
    gx_view want = F32V(SHAPE(3, 3), 2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f);
    s_expect(GX_OP_SCATTER_ELEMENTS, NULL, 3, in, want);
    s_expect(GX_OP_SCATTER, NULL, 3, in, want);
    gx_view row = F32V(SHAPE(1, 5), 1, 2, 3, 4, 5);
    gx_view ax1[3] = {row, I64V(SHAPE(1, 2), 1, 3), F32V(SHAPE(1, 2), 1.1f, 2.1f)};
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1)), 3, ax1,
             F32V(SHAPE(1, 5), 1, 1.1f, 3, 2.1f, 5));
    s_expect(GX_OP_SCATTER, NODE(A_INT("axis", 1)), 3, ax1,
             F32V(SHAPE(1, 5), 1, 1.1f, 3, 2.1f, 5));
    ax1[1] = I32V(SHAPE(1, 2), 1, -3);
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1)), 3, ax1,
             F32V(SHAPE(1, 5), 1, 1.1f, 2.1f, 4, 5));
    ax1[1] = I64V(SHAPE(1, 2), 1, 1);
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1), A_STR("reduction", "add")), 3, ax1,
             F32V(SHAPE(1, 5), 1, 5.2f, 3, 4, 5));
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1), A_STR("reduction", "mul")), 3, ax1,
             F32V(SHAPE(1, 5), 1, 2 * 1.1f * 2.1f, 3, 4, 5));
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1), A_STR("reduction", "max")), 3, ax1,
             F32V(SHAPE(1, 5), 1, 2.1f, 3, 4, 5));
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1), A_STR("reduction", "min")), 3, ax1,
             F32V(SHAPE(1, 5), 1, 1.1f, 3, 4, 5));
    ax1[2] = F32V(SHAPE(1, 2), NAN, 1);
    gx_view y;
    s_run(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1), A_STR("reduction", "max")), 3, ax1, 1,
          &y);
    ck_assert(isnan(((float *)y.data)[1]));

    /* random against the reference, duplicates included */
    static const char *const reds[] = {"none", "add", "mul", "max", "min"};
    gx_view x = RANDV(5, 8, 6);
    for (int axis = 0; axis < 3; axis++) {
        int64_t shape[3] = {4, 7, 5};
        shape[axis] = 11;
        gx_view ind = s_rand_idx(axis == 1 ? GX_I32 : GX_I64, 3, shape, x.shape[axis]);
        gx_view u = ot_rand(GX_F32, 3, shape);
        for (size_t r = 0; r < sizeof reds / sizeof reds[0]; r++)
            s_expect(GX_OP_SCATTER_ELEMENTS,
                     NODE(A_INT("axis", axis), A_STR("reduction", reds[r])), 3,
                     (gx_view[]){x, ind, u}, s_ref_scatter_elements(&x, &ind, &u, axis, reds[r]));
    }

    /* integer and half reductions */
    gx_view i8[3] = {TYPEDV(GX_I8, int8_t, SHAPE(4), 100, -100, 5, 7), IVEC(0, 1, 2, 0),
                     TYPEDV(GX_I8, int8_t, SHAPE(4), 100, -100, -9, 1)};
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "add")), 3, i8,
             TYPEDV(GX_I8, int8_t, SHAPE(4), -55, 56, -4, 7)); /* wraps */
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "min")), 3, i8,
             TYPEDV(GX_I8, int8_t, SHAPE(4), 1, -100, -9, 7));
    gx_view u64[3] = {TYPEDV(GX_U64, uint64_t, SHAPE(2), 3, UINT64_MAX), IVEC(1, 1),
                      TYPEDV(GX_U64, uint64_t, SHAPE(2), 2, 5)};
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "max")), 3, u64,
             TYPEDV(GX_U64, uint64_t, SHAPE(2), 3, UINT64_MAX));
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "mul")), 3, u64,
             TYPEDV(GX_U64, uint64_t, SHAPE(2), 3, UINT64_MAX * 10));
    gx_view h[3] = {TYPEDV(GX_F16, uint16_t, SHAPE(2), 0x3c00, 0x4000), IVEC(0, 0),
                    TYPEDV(GX_F16, uint16_t, SHAPE(2), 0x3c00, 0x4000)}; /* 1, 2 */
    s_expect(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "add")), 3, h,
             TYPEDV(GX_F16, uint16_t, SHAPE(2), 0x4400, 0x4000)); /* 4, 2 */
    gx_view b[3] = {TYPEDV(GX_BOOL, uint8_t, SHAPE(2), 0, 1), IVEC(1), TYPEDV(GX_BOOL, uint8_t,
                                                                        SHAPE(1), 0)};
    s_expect(GX_OP_SCATTER_ELEMENTS, NULL, 3, b, TYPEDV(GX_BOOL, uint8_t, SHAPE(2), 0, 0));

    /* out-of-range updates that infer could not see are skipped */
    s_expect_unchecked(GX_OP_SCATTER_ELEMENTS, NODE(A_INT("axis", 1)), 3,
                       (gx_view[]){row, I64V(SHAPE(1, 3), 5, -6, 0), F32V(SHAPE(1, 3), 9, 9, 7)}, 1,
                       F32V(SHAPE(1, 5), 7, 2, 3, 4, 5));

    ot_expect_error(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "sum")), 3, in, GX_EATTR,
                    "ScatterElements: reduction 'sum' is not one of none, add, mul, max, min");
    ot_expect_error(GX_OP_SCATTER_ELEMENTS, NODE(A_STR("reduction", "add")), 3, b, GX_EDTYPE,
                    "ScatterElements: reduction 'add' is not supported for bool");
    ot_expect_error(GX_OP_SCATTER_ELEMENTS, NULL, 3, (gx_view[]){z, in[1], RANDV(3, 2)},
                    GX_ESHAPE, "ScatterElements: updates [3,2] and indices [2,3] differ in shape");
    ot_expect_error(GX_OP_SCATTER_ELEMENTS, NULL, 3,
                    (gx_view[]){z, in[1], ot_rand(GX_F64, SHAPE(2, 3))}, GX_EDTYPE,
                    "ScatterElements: updates are float64 but data is float32");
    ot_expect_error(GX_OP_SCATTER, NULL, 3, (gx_view[]){z, I64V(SHAPE(1, 1), 3), RANDV(1, 1)},
                    GX_EINVAL, "Scatter: index 3 is out of range for a dim of 3");
    ot_expect_error(GX_OP_SCATTER, NODE(A_INT("axis", -3)), 3, in, GX_EATTR,
                    "Scatter: axis -3 is out of range for rank 2");
}
END_TEST

START_TEST(test_scatter_nd)
{
    gx_view x = F32V(SHAPE(8), 1, 2, 3, 4, 5, 6, 7, 8);
    gx_view in[3] = {x, I64V(SHAPE(4, 1), 4, 3, 1, 7), F32V(SHAPE(4), 9, 10, 11, 12)};
    s_expect(GX_OP_SCATTER_ND, NULL, 3, in, F32V(SHAPE(8), 1, 11, 3, 10, 9, 6, 7, 12));
    in[1] = I64V(SHAPE(4, 1), 4, 4, -7, -1);
    s_expect(GX_OP_SCATTER_ND, NODE(A_STR("reduction", "add")), 3, in,
             F32V(SHAPE(8), 1, 13, 3, 4, 24, 6, 7, 20));
    s_expect(GX_OP_SCATTER_ND, NODE(A_STR("reduction", "mul")), 3, in,
             F32V(SHAPE(8), 1, 22, 3, 4, 450, 6, 7, 96));

    static const char *const reds[] = {"none", "add", "mul", "max", "min"};
    gx_view r = RANDV(4, 5, 6);
    for (int k = 1; k <= 3; k++) {
        int64_t ishape[3] = {3, 7, k}, ushape[4] = {3, 7, 5, 6};
        gx_view ind = ot_view(GX_I64, NULL, 3, ishape);
        ind.data = ot_alloc(s_nbytes(&ind));
        for (int64_t i = 0; i < ind.numel; i++) {
            const int64_t n = r.shape[i % k];
            ((int64_t *)ind.data)[i] = (int64_t)((ot_randf() + 2.0f) / 4.0f * (float)n) % n - n / 2;
        }
        memcpy(ushape + 2, r.shape + k, sizeof ushape[0] * (size_t)(3 - k));
        gx_view u = ot_rand(GX_F32, 2 + 3 - k, ushape);
        for (size_t j = 0; j < sizeof reds / sizeof reds[0]; j++)
            s_expect(GX_OP_SCATTER_ND, NODE(A_STR("reduction", reds[j])), 3,
                     (gx_view[]){r, ind, u}, s_ref_scatter_nd(&r, &ind, &u, reds[j]));
    }
    gx_view i32[3] = {TYPEDV(GX_I32, int32_t, SHAPE(2, 2), 1, 2, 3, 4), I64V(SHAPE(1, 1), 1),
                      TYPEDV(GX_I32, int32_t, SHAPE(1, 2), -5, 9)};
    s_expect(GX_OP_SCATTER_ND, NODE(A_STR("reduction", "max")), 3, i32,
             TYPEDV(GX_I32, int32_t, SHAPE(2, 2), 1, 2, 3, 9));
    s_expect_unchecked(GX_OP_SCATTER_ND, NULL, 3,
                       (gx_view[]){x, I64V(SHAPE(3, 1), 8, -9, 0), F32V(SHAPE(3), 9, 9, 0)}, 1,
                       F32V(SHAPE(8), 0, 2, 3, 4, 5, 6, 7, 8));

    ot_expect_error(GX_OP_SCATTER_ND, NULL, 3, (gx_view[]){x, I64V(SHAPE(1, 1), 8), RANDV(1)},
                    GX_EINVAL, "ScatterND: index 8 is out of range for a dim of 8");
    ot_expect_error(GX_OP_SCATTER_ND, NULL, 3, (gx_view[]){x, I64V(SHAPE(1, 1), 0), RANDV(2)},
                    GX_ESHAPE, "ScatterND: updates [2] do not match indices [1,1] and data [8]");
    ot_expect_error(GX_OP_SCATTER_ND, NULL, 3,
                    (gx_view[]){x, ot_rand(GX_I64, SHAPE(1, 2)), RANDV(1)}, GX_ESHAPE,
                    "ScatterND: indices [1,2] index 2 dims of data [8] (1 to 1 allowed)");
}
END_TEST

/* ---- Expand, Tile ---- */

START_TEST(test_expand_tile)
{
    gx_view c = F32V(SHAPE(3, 1), 1, 2, 3);
    s_expect(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, IVEC(3, 4)},
             F32V(SHAPE(3, 4), 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    gx_view y;
    s_run(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, IVEC(2, 1, 6)}, 1, &y);
    ot_check_shape(&y, SHAPE(2, 3, 6));
    s_expect(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, IVEC(1)}, c); /* shape smaller than data */
    static const int64_t xs[][4] = {{3, 1, 5, 1}, {1, 1, 1, 1}, {2, 3, 4, 5}, {4, 1, 1, 7}};
    static const int64_t ts[][4] = {{3, 6, 5, 9}, {2, 3, 4, 5}, {2, 3, 4, 5}, {4, 5, 3, 7}};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        gx_view x = ot_rand(GX_F32, 4, xs[i]);
        gx_view shape = IVEC(ts[i][0], ts[i][1], ts[i][2], ts[i][3]);
        s_expect(GX_OP_EXPAND, NULL, 2, (gx_view[]){x, shape},
                 s_ref_tile_expand(&x, 4, ts[i], false));
        s_expect(GX_OP_EXPAND, NULL, 2, (gx_view[]){x, IVEC(2, 1, 1, 1, 1)},
                 s_ref_tile_expand(&x, 5, (int64_t[]){2, xs[i][0], xs[i][1], xs[i][2], xs[i][3]},
                                   false));
    }

    gx_view t = F32V(SHAPE(2, 2), 0, 1, 2, 3);
    s_expect(GX_OP_TILE, NULL, 2, (gx_view[]){t, IVEC(2, 2)},
             F32V(SHAPE(4, 4), 0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3));
    s_expect(GX_OP_TILE, NULL, 2, (gx_view[]){t, IVEC(1, 0)}, F32V(SHAPE(2, 0), 0));
    gx_view x = RANDV(2, 3, 4, 5);
    s_expect(GX_OP_TILE, NULL, 2, (gx_view[]){x, IVEC(7, 6, 4, 2)},
             s_ref_tile_expand(&x, 4, (int64_t[]){14, 18, 16, 10}, true));
    gx_view x1 = RANDV(3, 1);
    s_expect(GX_OP_TILE, NULL, 2, (gx_view[]){x1, IVEC(5, 37)},
             s_ref_tile_expand(&x1, 2, (int64_t[]){15, 37}, true));
    gx_view s = ot_rand(GX_I16, 0, NULL);
    s_expect(GX_OP_TILE, NULL, 2, (gx_view[]){s, s_empty_i64()}, s);

    s_expect_dynamic(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, ot_view(GX_I64, NULL, SHAPE(2))});
    s_expect_dynamic(GX_OP_TILE, NULL, 2, (gx_view[]){c, ot_view(GX_I64, NULL, SHAPE(2))});
    ot_expect_error(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, IVEC(2, 4)}, GX_ESHAPE,
                    "Expand: data [3,1] does not broadcast with shape [2,4]");
    ot_expect_error(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, IVEC(-1, 4)}, GX_ESHAPE,
                    "Expand: shape [-1,4] has a negative dim");
    ot_expect_error(GX_OP_EXPAND, NULL, 2, (gx_view[]){c, I32V(SHAPE(1), 2)}, GX_EDTYPE,
                    "Expand: shape input is int32, expected int64");
    ot_expect_error(GX_OP_TILE, NULL, 2, (gx_view[]){c, IVEC(2)}, GX_ESHAPE,
                    "Tile: repeats has 1 entries for rank 2");
    ot_expect_error(GX_OP_TILE, NULL, 2, (gx_view[]){c, IVEC(2, -1)}, GX_EINVAL,
                    "Tile: repeats[1] is -1");
    ot_expect_error(GX_OP_TILE, NULL, 2, (gx_view[]){c, IVEC(INT64_MAX, 1)}, GX_ELIMIT,
                    "Tile: dim 0 overflows");
}
END_TEST

/* ---- Shape, Size, Constant, ConstantOfShape ---- */

START_TEST(test_shape_size)
{
    gx_view x = ot_view(GX_F32, NULL, SHAPE(3, 4, 5)); /* no data: only the shape is read */
    s_expect(GX_OP_SHAPE, NULL, 1, &x, IVEC(3, 4, 5));
    s_expect(GX_OP_SHAPE, NODE(A_INT("start", 1)), 1, &x, IVEC(4, 5));
    s_expect(GX_OP_SHAPE, NODE(A_INT("end", 1)), 1, &x, IVEC(3));
    s_expect(GX_OP_SHAPE, NODE(A_INT("start", 1), A_INT("end", -1)), 1, &x, IVEC(4));
    s_expect(GX_OP_SHAPE, NODE(A_INT("start", -1)), 1, &x, IVEC(5));
    s_expect(GX_OP_SHAPE, NODE(A_INT("start", -10), A_INT("end", 10)), 1, &x, IVEC(3, 4, 5));
    s_expect(GX_OP_SHAPE, NODE(A_INT("start", 2), A_INT("end", 1)), 1, &x, s_empty_i64());
    gx_view s = ot_view(GX_U8, NULL, 0, NULL);
    s_expect(GX_OP_SHAPE, NULL, 1, &s, s_empty_i64());
    gx_view n = ot_view(GX_I64, ot_copy(&(int64_t){60}, 8), 0, NULL);
    s_expect(GX_OP_SIZE, NULL, 1, &x, n);
    *(int64_t *)n.data = 1;
    s_expect(GX_OP_SIZE, NULL, 1, &s, n);
    *(int64_t *)n.data = 0;
    s_expect(GX_OP_SIZE, NULL, 1, (gx_view[]){ot_view(GX_BOOL, NULL, SHAPE(2, 0))}, n);
    ck_assert(gx_op_schema_get(GX_OP_SHAPE)->flags & GX_OPF_READS_SHAPES);
    ck_assert(gx_op_schema_get(GX_OP_SIZE)->flags & GX_OPF_READS_SHAPES);
}
END_TEST

START_TEST(test_constant)
{
    gx_view v = RANDV(5, 5);
    s_expect(GX_OP_CONSTANT, NODE(A_TENSOR("value", s_tensor(v))), 0, NULL, v);
    gx_view b = ot_rand(GX_BOOL, SHAPE(3, 0));
    s_expect(GX_OP_CONSTANT, NODE(A_TENSOR("value", s_tensor(b))), 0, NULL, b);
    s_expect(GX_OP_CONSTANT, NODE(A_FLOAT("value_float", 0.5)), 0, NULL,
             ot_view(GX_F32, ot_copy(&(float){0.5f}, 4), 0, NULL));
    s_expect(GX_OP_CONSTANT, NODE(A_FLOATS("value_floats", 1.5, -2, 1e30)), 0, NULL,
             F32V(SHAPE(3), 1.5f, -2, 1e30f));
    s_expect(GX_OP_CONSTANT, NODE(A_INT("value_int", -7)), 0, NULL,
             ot_view(GX_I64, ot_copy(&(int64_t){-7}, 8), 0, NULL));
    s_expect(GX_OP_CONSTANT, NODE(A_INTS("value_ints", 1, 2, INT64_MAX)), 0, NULL,
             IVEC(1, 2, INT64_MAX));
    ot_expect_error(GX_OP_CONSTANT, NODE(A_STR("value_string", "x")), 0, NULL, GX_EUNSUPPORTED,
                    "Constant: string values are not supported");
    ot_expect_error(GX_OP_CONSTANT, NULL, 0, NULL, GX_EATTR,
                    "Constant: needs exactly one of value, value_float, value_floats, value_int, "
                    "value_ints (got 0)");
    ot_expect_error(GX_OP_CONSTANT, NODE(A_INT("value_int", 1), A_FLOAT("value_float", 1)), 0,
                    NULL, GX_EATTR,
                    "Constant: needs exactly one of value, value_float, value_floats, value_int, "
                    "value_ints (got 2)");
}
END_TEST

START_TEST(test_constant_of_shape)
{
    gx_view ones = F32V(SHAPE(4, 3, 2), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                        1, 1, 1, 1, 1);
    s_expect(GX_OP_CONSTANT_OF_SHAPE, NODE(A_TENSOR("value", s_tensor(F32V(SHAPE(1), 1)))), 1,
             (gx_view[]){IVEC(4, 3, 2)}, ones);
    gx_view z = RANDV(10, 6);
    memset(z.data, 0, s_nbytes(&z));
    s_expect(GX_OP_CONSTANT_OF_SHAPE, NULL, 1, (gx_view[]){IVEC(10, 6)}, z);
    gx_view i = TYPEDV(GX_I32, int32_t, SHAPE(1), 0);
    s_expect(GX_OP_CONSTANT_OF_SHAPE, NODE(A_TENSOR("value", s_tensor(i))), 1,
             (gx_view[]){IVEC(0)}, ot_view(GX_I32, i.data, SHAPE(0)));
    gx_view h = TYPEDV(GX_F16, uint16_t, SHAPE(1), 0x3c00), y;
    s_run(GX_OP_CONSTANT_OF_SHAPE, NODE(A_TENSOR("value", s_tensor(h))), 1,
          (gx_view[]){IVEC(3, 37)}, 1, &y);
    ck_assert_int_eq(y.dtype, GX_F16);
    for (int j = 0; j < 3 * 37; j++)
        ck_assert(((uint16_t *)y.data)[j] == 0x3c00);
    gx_view d = TYPEDV(GX_F64, double, SHAPE(1), -2.5);
    s_expect(GX_OP_CONSTANT_OF_SHAPE, NODE(A_TENSOR("value", s_tensor(d))), 1,
             (gx_view[]){s_empty_i64()}, ot_view(GX_F64, d.data, 0, NULL));

    s_expect_dynamic(GX_OP_CONSTANT_OF_SHAPE, NULL, 1,
                     (gx_view[]){ot_view(GX_I64, NULL, SHAPE(2))});
    ot_expect_error(GX_OP_CONSTANT_OF_SHAPE, NULL, 1, (gx_view[]){IVEC(2, -1)}, GX_ESHAPE,
                    "ConstantOfShape: dim 1 is -1");
    ot_expect_error(GX_OP_CONSTANT_OF_SHAPE, NODE(A_TENSOR("value", s_tensor(IVEC(1, 2)))), 1,
                    (gx_view[]){IVEC(2)}, GX_EATTR, "ConstantOfShape: value must hold one element");
    ot_expect_error(GX_OP_CONSTANT_OF_SHAPE, NULL, 1, (gx_view[]){I32V(SHAPE(1), 2)}, GX_EDTYPE,
                    "ConstantOfShape: shape input is int32, expected int64");
}
END_TEST

/* ---- ReverseSequence ---- */

START_TEST(test_reverse_sequence)
{
    gx_view x = F32V(SHAPE(4, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    s_expect(GX_OP_REVERSE_SEQUENCE, NULL, 2, (gx_view[]){x, IVEC(4, 3, 2, 1)},
             F32V(SHAPE(4, 4), 12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15));
    s_expect(GX_OP_REVERSE_SEQUENCE,
             NODE(A_INT("batch_axis", 0), A_INT("time_axis", 1)), 2,
             (gx_view[]){x, IVEC(1, 2, 3, 4)},
             F32V(SHAPE(4, 4), 0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12));
    /* rank 3: the trailing dim moves as a block */
    gx_view x3 = F32V(SHAPE(2, 3, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    s_expect(GX_OP_REVERSE_SEQUENCE, NODE(A_INT("batch_axis", 0), A_INT("time_axis", 1)), 2,
             (gx_view[]){x3, IVEC(3, 0)},
             F32V(SHAPE(2, 3, 2), 4, 5, 2, 3, 0, 1, 6, 7, 8, 9, 10, 11));
    gx_view u8 = ot_rand(GX_U8, SHAPE(37, 5, 3)), y;
    s_run(GX_OP_REVERSE_SEQUENCE, NULL, 2, (gx_view[]){u8, IVEC(37, 1, 20, 0, 36)}, 1, &y);
    const uint8_t *py = y.data, *px = u8.data; /* [time 37, batch 5, 3] */
    ck_assert(py[(36 * 5 + 0) * 3 + 2] == px[(0 * 5 + 0) * 3 + 2]);   /* len 37: reversed */
    ck_assert(py[(36 * 5 + 2) * 3 + 1] == px[(36 * 5 + 2) * 3 + 1]);  /* len 20: past it */
    ck_assert(py[(5 * 5 + 2) * 3 + 1] == px[(14 * 5 + 2) * 3 + 1]);   /* len 20: reversed */
    s_expect_unchecked(GX_OP_REVERSE_SEQUENCE, NODE(A_INT("batch_axis", 0), A_INT("time_axis", 1)),
                       2, (gx_view[]){F32V(SHAPE(2, 2), 1, 2, 3, 4), IVEC(9, -9)}, 1,
                       F32V(SHAPE(2, 2), 2, 1, 3, 4));

    ot_expect_error(GX_OP_REVERSE_SEQUENCE, NULL, 2, (gx_view[]){x, IVEC(4, 5, 1, 1)}, GX_EINVAL,
                    "ReverseSequence: sequence_lens[1] = 5 is outside [0, 4]");
    ot_expect_error(GX_OP_REVERSE_SEQUENCE, NULL, 2, (gx_view[]){x, IVEC(4)}, GX_ESHAPE,
                    "ReverseSequence: sequence_lens has 1 entries for a batch of 4");
    ot_expect_error(GX_OP_REVERSE_SEQUENCE, NODE(A_INT("batch_axis", 0)), 2,
                    (gx_view[]){x, IVEC(1, 1, 1, 1)}, GX_EATTR,
                    "ReverseSequence: batch_axis 0 and time_axis 0 must be 0 and 1 in some order");
    ot_expect_error(GX_OP_REVERSE_SEQUENCE, NULL, 2, (gx_view[]){RANDV(4), IVEC(1)}, GX_ESHAPE,
                    "ReverseSequence: input has rank 1; 2 or more needed");
}
END_TEST

/* ---- the schemas' declarations ---- */

START_TEST(test_value_inputs)
{
    static const struct {
        gx_op op;
        uint64_t bits;
    } want[] = {
        {GX_OP_RESHAPE, 1u << 1}, {GX_OP_SQUEEZE, 1u << 1}, {GX_OP_UNSQUEEZE, 1u << 1},
        {GX_OP_SPLIT, 1u << 1},   {GX_OP_SLICE, 0x1e},      {GX_OP_EXPAND, 1u << 1},
        {GX_OP_TILE, 1u << 1},    {GX_OP_CONSTANT_OF_SHAPE, 1u << 0},
        {GX_OP_GATHER, 0},        {GX_OP_SCATTER_ND, 0},    {GX_OP_REVERSE_SEQUENCE, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(gx_op_schema_get(want[i].op)->value_inputs == want[i].bits, "%s",
                      gx_op_name(want[i].op));
    gx_op op;
    ck_assert_int_eq(gx_op_lookup("GatherND", &op), GX_OK);
    ck_assert_int_eq(op, GX_OP_GATHER_ND);
    ck_assert_int_eq(gx_op_lookup("ConstantOfShape", &op), GX_OK);
    ck_assert_int_eq(op, GX_OP_CONSTANT_OF_SHAPE);
}
END_TEST

Suite *ops_shape_suite(void)
{
    Suite *s = suite_create("ops_shape");
    TCase *tc = tcase_create("shape");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_transpose_tiled);
    tcase_add_test(tc, test_flatten);
    tcase_add_test(tc, test_squeeze);
    tcase_add_test(tc, test_unsqueeze);
    tcase_add_test(tc, test_reshape_dynamic);
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_slice_hand);
    tcase_add_test(tc, test_slice_ref);
    tcase_add_test(tc, test_slice_errors);
    tcase_add_test(tc, test_gather);
    tcase_add_test(tc, test_gather_elements);
    tcase_add_test(tc, test_gather_nd);
    tcase_add_test(tc, test_scatter_elements);
    tcase_add_test(tc, test_scatter_nd);
    tcase_add_test(tc, test_expand_tile);
    tcase_add_test(tc, test_shape_size);
    tcase_add_test(tc, test_constant);
    tcase_add_test(tc, test_constant_of_shape);
    tcase_add_test(tc, test_reverse_sequence);
    tcase_add_test(tc, test_value_inputs);
    suite_add_tcase(s, tc);
    return s;
}
