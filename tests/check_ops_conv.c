/*
 * Op tests of the conv family (GX_OPS_CONV in ops/op.h): hand values (most
 * from the ONNX backend node tests), naive references in double for random
 * inputs over every attribute, and the errors infer must report. Every
 * kernel run is repeated as nth = 3 and 7 shares, which must match nth = 1
 * and write each output byte exactly once.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h" /* attribute positions, f16 conversions */
#include "ops/gemm.h"    /* gx_cpu_gemm_isa_set */
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* ---- building views ---- */

static gx_view s_iota(int64_t from, int ndim, const int64_t *shape)
{
    gx_view v = ot_view(GX_F32, NULL, ndim, shape);
    float *p = v.data = ot_alloc((size_t)v.numel * sizeof *p);
    for (int64_t i = 0; i < v.numel; i++)
        p[i] = (float)(from + i);
    return v;
}

static gx_view s_ones(int ndim, const int64_t *shape)
{
    gx_view v = ot_view(GX_F32, NULL, ndim, shape);
    float *p = v.data = ot_alloc((size_t)v.numel * sizeof *p);
    for (int64_t i = 0; i < v.numel; i++)
        p[i] = 1.0f;
    return v;
}

/* A view of dtype dt holding the given values converted from double. */
static gx_view s_typed(gx_dtype dt, int ndim, const int64_t *shape, const double *vals)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    char *p = v.data = ot_alloc((size_t)v.numel * gx_dtype_size(dt));
    for (int64_t i = 0; i < v.numel; i++) {
        switch (dt) {
        case GX_F32: ((float *)p)[i] = (float)vals[i]; break;
        case GX_F64: ((double *)p)[i] = vals[i]; break;
        case GX_F16: ((uint16_t *)p)[i] = gx_f32_to_f16((float)vals[i]); break;
        case GX_I8: ((int8_t *)p)[i] = (int8_t)vals[i]; break;
        case GX_U8: ((uint8_t *)p)[i] = (uint8_t)vals[i]; break;
        case GX_I32: ((int32_t *)p)[i] = (int32_t)vals[i]; break;
        case GX_I64: ((int64_t *)p)[i] = (int64_t)vals[i]; break;
        case GX_BF16:
        case GX_BOOL:
        case GX_I16:
        case GX_U16:
        case GX_U32:
        case GX_U64:
        case GX_STRING:
        case GX_DTYPE_COUNT:
            ck_abort_msg("s_typed: dtype %d", (int)dt);
        }
    }
    return v;
}

#define TYPED(dt, shape, ...) s_typed(dt, shape, (double[]){__VA_ARGS__})

/* Element i of a view as double. */
static double s_get(const gx_view *v, int64_t i)
{
    switch (v->dtype) {
    case GX_F32: return ((const float *)v->data)[i];
    case GX_F64: return ((const double *)v->data)[i];
    case GX_F16: return gx_f16_to_f32(((const uint16_t *)v->data)[i]);
    case GX_I8: return ((const int8_t *)v->data)[i];
    case GX_U8: return ((const uint8_t *)v->data)[i];
    case GX_I32: return ((const int32_t *)v->data)[i];
    case GX_I64: return (double)((const int64_t *)v->data)[i];
    case GX_BF16:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    ck_abort_msg("s_get: dtype %d", (int)v->dtype);
    return 0;
}

/* Random values of dtype dt: floats in [-2, 2), integers over their range. */
static gx_view s_rand(gx_dtype dt, int ndim, const int64_t *shape)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    double *vals = malloc(sizeof *vals * (size_t)(v.numel + 1));
    ck_assert_ptr_nonnull(vals);
    for (int64_t i = 0; i < v.numel; i++) {
        float f = ot_randf();
        vals[i] = dt == GX_I8 ? floor(f * 64) : dt == GX_U8 ? floor((f + 2) * 63) : f;
    }
    v = s_typed(dt, ndim, shape, vals);
    free(vals);
    return v;
}

/* ---- running and comparing ---- */

static bool s_close(const gx_view *got, const gx_view *want, double tol)
{
    if (got->ndim != want->ndim || got->dtype != want->dtype)
        return false;
    for (int d = 0; d < got->ndim; d++) {
        if (got->shape[d] != want->shape[d])
            return false;
    }
    for (int64_t i = 0; i < want->numel; i++) {
        double a = s_get(got, i), b = s_get(want, i);
        if (!(fabs(a - b) <= tol * (1 + fabs(b)))) {
            fprintf(stderr, "  element %lld of %lld: got %g, want %g\n", (long long)i,
                    (long long)want->numel, a, b);
            return false;
        }
    }
    return true;
}

/* Runs op with nth = 1, 3 and 7 and compares each of the n_out outputs with
 * want (tolerance tol relative to 1 + |want|; 0: exact). Then runs every
 * share alone into outputs filled with 0x00 and with 0xFF: each byte must
 * be written by exactly one share. */
static void s_expect_n(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                       const gx_view *want, double tol)
{
    for (int nth = 1; nth <= 7; nth += 2 + (nth == 3 ? 2 : 0)) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out[2];
        char err[ERRLEN];
        int rc = ot_run_n(op, node, n_in, in, nth, av, n_out, out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
        for (int o = 0; o < n_out; o++) {
            ck_assert_msg(s_close(&out[o], &want[o], tol), "%s nth=%d: output %d differs",
                          gx_op_name(op), nth, o);
        }
        if (nth == 1)
            continue;
        ot_check_shares(op, av, n_in, in, n_out, out, nth);
    }
}

static void s_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want,
                     double tol)
{
    s_expect_n(op, node, n_in, in, 1, &want, tol);
}

/* Expects infer to set output 0 to this shape (nothing is run). */
static void s_expect_shape(gx_op op, const gx_node *node, int n_in, const gx_view *in, int ndim,
                           const int64_t *shape)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[2] = {0};
    char err[ERRLEN] = "";
    ck_assert_int_eq(gx_op_resolve_attrs(op, node, av, err, ERRLEN), GX_OK);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = ERRLEN};
    int rc = gx_op_schema_get(op)->infer(&ic);
    ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
    ot_check_shape(&out[0], ndim, shape);
}

/* ---- naive references, in double ----
 * Geometry per spatial dim: stride s, dilation d (0 means 1), begin pad pl
 * and end pad ph (only pools with count_include_pad read ph). */

typedef struct s_geo {
    int64_t s[3], d[3], pl[3], ph[3];
} s_geo;

#define ONE(v) ((v) ? (v) : 1)

/* Flat offset in x [N, C, sp...] of channel nc's element at spatial
 * coordinates xi, or -1 outside. */
static int64_t s_at(const gx_view *x, int64_t nc, const int64_t *xi)
{
    int64_t off = nc;
    for (int d = 2; d < x->ndim; d++) {
        if (xi[d - 2] < 0 || xi[d - 2] >= x->shape[d])
            return -1;
        off = off * x->shape[d] + xi[d - 2];
    }
    return off;
}

/* Conv / ConvInteger: y[n, oc, o] = b[oc] + sum over the group's channels c
 * and taps j of (x[n, c, o * s - pl + j * d] - xz) * (w[oc, c, j] - wz[oc]). */
static gx_view s_ref_conv(gx_dtype dt, const gx_view *x, const gx_view *w, const gx_view *b,
                          int64_t group, const s_geo *g, const double *xz, const gx_view *wz,
                          int ndim, const int64_t *yshape)
{
    gx_view y;
    const int64_t ynumel = gx_shape_numel(ndim, yshape, INT64_MAX);
    const int nsp = x->ndim - 2;
    const int64_t c = x->shape[1], m = w->shape[0], cg = c / group, mg = m / group;
    const int64_t ks = gx_shape_numel(nsp, w->shape + 2, INT64_MAX);
    double *acc = calloc((size_t)ynumel + 1, sizeof *acc);
    int64_t idx[GX_MAX_DIMS], j[GX_MAX_DIMS], xi[GX_MAX_DIMS];
    for (int64_t e = 0; e < ynumel; e++) {
        ot_unravel(e, ndim, yshape, idx);
        const int64_t n = idx[0], oc = idx[1], gi = oc / mg;
        double sum = b ? s_get(b, oc) : 0;
        const double wzv = wz ? s_get(wz, wz->numel > 1 ? oc : 0) : 0;
        for (int64_t ci = 0; ci < cg; ci++) {
            for (int64_t t = 0; t < ks; t++) {
                ot_unravel(t, nsp, w->shape + 2, j);
                for (int d = 0; d < nsp; d++)
                    xi[d] = idx[2 + d] * ONE(g->s[d]) - g->pl[d] + j[d] * ONE(g->d[d]);
                int64_t off = s_at(x, n * c + gi * cg + ci, xi);
                if (off >= 0)
                    sum += (s_get(x, off) - (xz ? *xz : 0)) *
                           (s_get(w, (oc * cg + ci) * ks + t) - wzv);
            }
        }
        acc[e] = sum;
    }
    y = s_typed(dt, ndim, yshape, acc);
    free(acc);
    return y;
}

/* ConvTranspose: every x element times every tap of its group's filters,
 * added at y position i * s - pl + j * d. */
static gx_view s_ref_convtranspose(const gx_view *x, const gx_view *w, const gx_view *b,
                                   int64_t group, const s_geo *g, int ndim, const int64_t *yshape)
{
    const int nsp = x->ndim - 2;
    const int64_t c = x->shape[1], mg = w->shape[1], m = mg * group, cg = c / group;
    const int64_t ks = gx_shape_numel(nsp, w->shape + 2, INT64_MAX);
    const int64_t ysz = gx_shape_numel(nsp, yshape + 2, INT64_MAX);
    gx_view y = ot_view(GX_F32, NULL, ndim, yshape);
    double *acc = calloc((size_t)y.numel + 1, sizeof *acc);
    for (int64_t e = 0; e < y.numel; e++)
        acc[e] = b ? s_get(b, e / ysz % m) : 0;
    int64_t idx[GX_MAX_DIMS], j[GX_MAX_DIMS], yi[GX_MAX_DIMS];
    for (int64_t e = 0; e < x->numel; e++) {
        ot_unravel(e, x->ndim, x->shape, idx);
        const int64_t n = idx[0], ci = idx[1], gi = ci / cg;
        for (int64_t mm = 0; mm < mg; mm++) {
            for (int64_t t = 0; t < ks; t++) {
                ot_unravel(t, nsp, w->shape + 2, j);
                int64_t off = n * m + gi * mg + mm;
                for (int d = 0; d < nsp && off >= 0; d++) {
                    yi[d] = idx[2 + d] * ONE(g->s[d]) - g->pl[d] + j[d] * ONE(g->d[d]);
                    off = yi[d] < 0 || yi[d] >= yshape[2 + d] ? -1 : off * yshape[2 + d] + yi[d];
                }
                if (off >= 0)
                    acc[off] += s_get(x, e) * s_get(w, (ci * mg + mm) * ks + t);
            }
        }
    }
    y = s_typed(GX_F32, ndim, yshape, acc);
    free(acc);
    return y;
}

enum { S_MAX, S_AVG, S_AVG_PAD, S_LP };

/* Pools over windows k (p: LpPool's p); ind, when non-NULL, receives the
 * row-major flat index of each max. */
static gx_view s_ref_pool(int kind, int p, const gx_view *x, const int64_t *k, const s_geo *g,
                          int ndim, const int64_t *yshape, gx_view *ind)
{
    const int nsp = x->ndim - 2;
    const int64_t ks = gx_shape_numel(nsp, k, INT64_MAX);
    gx_view y = ot_view(x->dtype, NULL, ndim, yshape);
    double *acc = calloc((size_t)y.numel + 1, sizeof *acc);
    double *at = calloc((size_t)y.numel + 1, sizeof *at);
    int64_t idx[GX_MAX_DIMS], j[GX_MAX_DIMS], xi[GX_MAX_DIMS];
    for (int64_t e = 0; e < y.numel; e++) {
        ot_unravel(e, ndim, yshape, idx);
        double v = kind == S_MAX ? -INFINITY : 0, n = 0;
        for (int64_t t = 0; t < ks; t++) {
            ot_unravel(t, nsp, k, j);
            bool padded = true;
            for (int d = 0; d < nsp; d++) {
                xi[d] = idx[2 + d] * ONE(g->s[d]) - g->pl[d] + j[d] * ONE(g->d[d]);
                padded &= xi[d] >= -g->pl[d] && xi[d] < x->shape[2 + d] + g->ph[d];
            }
            int64_t off = s_at(x, idx[0] * x->shape[1] + idx[1], xi);
            n += kind == S_AVG_PAD ? padded : off >= 0;
            if (off < 0)
                continue;
            double xv = s_get(x, off);
            if (kind == S_MAX && xv > v) {
                v = xv;
                at[e] = (double)off;
            } else if (kind == S_AVG || kind == S_AVG_PAD) {
                v += xv;
            } else if (kind == S_LP) {
                v += pow(fabs(xv), p);
            }
        }
        acc[e] = kind == S_MAX ? v : kind == S_LP ? pow(v, 1.0 / p) : v / n;
    }
    y = s_typed(x->dtype, ndim, yshape, acc);
    if (ind)
        *ind = s_typed(GX_I64, ndim, yshape, at);
    free(acc);
    free(at);
    return y;
}

/* ---- Conv ---- */

START_TEST(test_conv_node_cases)
{
    /* the ONNX node tests: x = 0..n-1, W all ones */
    gx_view x55 = s_iota(0, SHAPE(1, 1, 5, 5)), x75 = s_iota(0, SHAPE(1, 1, 7, 5));
    gx_view w = s_ones(SHAPE(1, 1, 3, 3));
    s_expect(GX_OP_CONV, NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1)), 2,
             (gx_view[]){x55, w},
             F32V(SHAPE(1, 1, 5, 5), 12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                  93, 144, 153, 162, 111, 72, 111, 117, 123, 84),
             0);
    s_expect(GX_OP_CONV, NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 0, 0, 0, 0)), 2,
             (gx_view[]){x55, w}, F32V(SHAPE(1, 1, 3, 3), 54, 63, 72, 99, 108, 117, 144, 153, 162),
             0);
    s_expect(GX_OP_CONV, NODE(A_INTS("pads", 1, 1, 1, 1), A_INTS("strides", 2, 2)), 2,
             (gx_view[]){x75, w},
             F32V(SHAPE(1, 1, 4, 3), 12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124), 0);
    s_expect(GX_OP_CONV, NODE(A_INTS("strides", 2, 2)), 2, (gx_view[]){x75, w},
             F32V(SHAPE(1, 1, 3, 2), 54, 72, 144, 162, 234, 252), 0);
    s_expect(GX_OP_CONV, NODE(A_INTS("pads", 1, 0, 1, 0), A_INTS("strides", 2, 2)), 2,
             (gx_view[]){x75, w}, F32V(SHAPE(1, 1, 4, 2), 21, 33, 99, 117, 189, 207, 171, 183),
             0);
    s_expect(GX_OP_CONV, NODE(A_STR("auto_pad", "SAME_LOWER"), A_INTS("strides", 2, 2)), 2,
             (gx_view[]){x55, w},
             F32V(SHAPE(1, 1, 3, 3), 12, 27, 24, 63, 108, 81, 72, 117, 84), 0);
}
END_TEST

/* One random Conv against the reference: x, W (and B) of these shapes. */
static void s_conv_case(const gx_node *node, int nx, const int64_t *xs, int nw, const int64_t *ws,
                        bool bias, int64_t group, s_geo g, int ny, const int64_t *ys)
{
    gx_view in[3] = {s_rand(GX_F32, nx, xs), s_rand(GX_F32, nw, ws),
                     s_rand(GX_F32, SHAPE(ws[0]))};
    gx_view want = s_ref_conv(GX_F32, &in[0], &in[1], bias ? &in[2] : NULL, group, &g, NULL,
                              NULL, ny, ys);
    s_expect(GX_OP_CONV, node, bias ? 3 : 2, in, want, 1e-4);
    ot_free_all(); /* everything above was made here */
}

START_TEST(test_conv_reference)
{
    /* im2col: pads, bias, several images */
    s_conv_case(NODE(A_INTS("pads", 1, 1, 1, 1)), SHAPE(3, 3, 9, 8), SHAPE(4, 3, 3, 3), true, 1,
                (s_geo){.pl = {1, 1}}, SHAPE(3, 4, 9, 8));
    /* strides, dilations, asymmetric pads, no bias */
    s_conv_case(NODE(A_INTS("pads", 0, 1, 2, 1), A_INTS("strides", 2, 3),
                     A_INTS("dilations", 2, 1)),
                SHAPE(2, 2, 11, 13), SHAPE(3, 2, 3, 2), false, 1,
                (s_geo){.s = {2, 3}, .d = {2, 1}, .pl = {0, 1}}, SHAPE(2, 3, 5, 5));
    /* groups */
    s_conv_case(NODE(A_INT("group", 2), A_INTS("pads", 1, 0, 1, 0)), SHAPE(2, 4, 6, 7),
                SHAPE(6, 2, 3, 2), true, 2, (s_geo){.pl = {1, 0}}, SHAPE(2, 6, 6, 6));
    /* depthwise (the direct path), with strides, pads and dilation */
    s_conv_case(NODE(A_INT("group", 5), A_INTS("pads", 1, 1, 1, 1), A_INTS("strides", 2, 1),
                     A_INTS("dilations", 1, 2)),
                SHAPE(2, 5, 9, 10), SHAPE(5, 1, 3, 3), true, 5,
                (s_geo){.s = {2, 1}, .d = {1, 2}, .pl = {1, 1}}, SHAPE(2, 5, 5, 8));
    /* depthwise with a channel multiplier of 2 */
    s_conv_case(NODE(A_INT("group", 3)), SHAPE(1, 3, 6, 5), SHAPE(6, 1, 2, 2), false, 3,
                (s_geo){0}, SHAPE(1, 6, 5, 4));
    /* pointwise: 1x1, stride 1, no padding (no im2col), with and without groups */
    s_conv_case(NULL, SHAPE(2, 6, 7, 9), SHAPE(5, 6, 1, 1), true, 1, (s_geo){0},
                SHAPE(2, 5, 7, 9));
    s_conv_case(NODE(A_INT("group", 2)), SHAPE(3, 6, 4, 5), SHAPE(4, 3, 1, 1), false, 2,
                (s_geo){0}, SHAPE(3, 4, 4, 5));
    /* 1x1 with stride 2 or padding still goes through im2col */
    s_conv_case(NODE(A_INTS("strides", 2, 2)), SHAPE(1, 4, 7, 6), SHAPE(3, 4, 1, 1), true, 1,
                (s_geo){.s = {2, 2}}, SHAPE(1, 3, 4, 3));
    s_conv_case(NODE(A_INTS("pads", 1, 0, 0, 1)), SHAPE(1, 2, 3, 3), SHAPE(2, 2, 1, 1), false, 1,
                (s_geo){.pl = {1, 0}}, SHAPE(1, 2, 4, 4));
    /* 1-D */
    s_conv_case(NODE(A_INTS("pads", 2, 1), A_INTS("strides", 3), A_INTS("dilations", 2),
                     A_INTS("kernel_shape", 4)),
                SHAPE(2, 3, 17), SHAPE(4, 3, 4), true, 1, (s_geo){.s = {3}, .d = {2}, .pl = {2}},
                SHAPE(2, 4, 5));
    /* 3-D */
    s_conv_case(NODE(A_INTS("pads", 1, 0, 1, 0, 1, 1), A_INTS("strides", 1, 2, 1)),
                SHAPE(1, 2, 5, 6, 4), SHAPE(3, 2, 2, 3, 2), true, 1,
                (s_geo){.s = {1, 2, 1}, .pl = {1, 0, 1}}, SHAPE(1, 3, 5, 3, 5));
    /* auto_pad with an odd total padding: SAME_UPPER puts the extra at the end */
    s_conv_case(NODE(A_STR("auto_pad", "SAME_UPPER"), A_INTS("strides", 2, 1)), SHAPE(1, 2, 7, 6),
                SHAPE(2, 2, 4, 2), false, 1, (s_geo){.s = {2, 1}, .pl = {1, 0}},
                SHAPE(1, 2, 4, 6));
    s_conv_case(NODE(A_STR("auto_pad", "SAME_LOWER"), A_INTS("strides", 2, 1)), SHAPE(1, 2, 7, 6),
                SHAPE(2, 2, 4, 2), false, 1, (s_geo){.s = {2, 1}, .pl = {2, 1}},
                SHAPE(1, 2, 4, 6));
    s_conv_case(NODE(A_STR("auto_pad", "VALID"), A_INTS("strides", 2, 2)), SHAPE(1, 2, 7, 6),
                SHAPE(2, 2, 3, 3), true, 1, (s_geo){.s = {2, 2}}, SHAPE(1, 2, 3, 2));
    /* a window wider than the padded input is fine for a conv if it fits */
    s_conv_case(NODE(A_INTS("pads", 2, 2)), SHAPE(1, 1, 1), SHAPE(1, 1, 5), true, 1,
                (s_geo){.pl = {2}}, SHAPE(1, 1, 1));
    /* few output positions and many channels: blocks of output channels,
     * each with its own im2col columns (gx_conv_row_blocks) */
    s_conv_case(NODE(A_INTS("pads", 1, 1, 1, 1)), SHAPE(1, 3, 5, 5), SHAPE(260, 3, 3, 3), true, 1,
                (s_geo){.pl = {1, 1}}, SHAPE(1, 260, 5, 5));
    s_conv_case(NODE(A_INT("group", 2), A_INTS("strides", 2, 2)), SHAPE(2, 4, 7, 7),
                SHAPE(512, 2, 3, 3), false, 2, (s_geo){.s = {2, 2}}, SHAPE(2, 512, 3, 3));
    s_conv_case(NULL, SHAPE(1, 8, 4, 4), SHAPE(400, 8, 1, 1), true, 1, (s_geo){0},
                SHAPE(1, 400, 4, 4));
    /* no channels: just the bias */
    s_conv_case(NULL, SHAPE(2, 0, 3, 3), SHAPE(2, 0, 2, 2), true, 1, (s_geo){0},
                SHAPE(2, 2, 2, 2));
}
END_TEST

/* 1-D convs with stride 1 (ops/cpu/conv.c's 1-D kernel with AVX-512 or
 * AVX2, im2col on the baseline) on every ISA the CPU has: odd channel
 * counts (runs of 1 to 6 output channels with AVX-512, 1 to 4 with AVX2),
 * groups, batch > 1, dilations and asymmetric pads, lengths with a partial
 * last run and runs all inside x, outputs longer than a tile, more input
 * channels than a pass over a tile takes (sums continued from y), k
 * up to 32 and past it (im2col). Each against the reference, byte for
 * byte the same for 1, 3 and 7 shares (ot_check_threads), and the 1-D
 * kernel's outputs the same bytes on AVX-512 and AVX2 (the same sums in
 * the same order). */
START_TEST(test_conv_1d)
{
    static const struct {
        int64_t n, c, m, l, k, dil, pl, ph, group;
        bool bias;
    } cases[] = {
        {1, 1, 64, 300, 7, 1, 3, 3, 1, true},    /* a first layer */
        {2, 5, 13, 200, 3, 2, 2, 2, 1, false},   /* odd channels, batch 2 */
        {1, 16, 7, 517, 3, 8, 8, 8, 1, true},    /* wide dilation, interior runs */
        {1, 6, 8, 90, 5, 1, 0, 4, 2, true},      /* groups, asymmetric pads */
        {3, 4, 6, 64, 1, 1, 1, 0, 1, true},      /* 1 tap, padded (not pointwise) */
        {1, 3, 5, 40, 32, 1, 16, 15, 1, true},   /* 32 taps */
        {1, 2, 3, 50, 33, 1, 16, 16, 1, false},  /* 33 taps: im2col */
        {1, 7, 11, 20, 5, 3, 0, 0, 1, true},     /* a window longer than the output */
        {2, 24, 24, 129, 3, 1, 1, 1, 4, true},   /* groups of 6, 1 position past 128 */
        {1, 3, 1, 45, 3, 2, 1, 3, 1, true},      /* one output channel */
        {1, 4, 2, 33, 2, 1, 1, 0, 1, false},     /* two, an even window */
        {1, 70, 9, 251, 3, 4, 4, 4, 1, true},    /* 70 input channels: passes 24, 24, 22 */
        {2, 80, 10, 61, 5, 2, 3, 5, 2, false},   /* groups of 40 (24, 16), batch 2 */
        {1, 33, 5, 241, 3, 1, 1, 1, 1, true},    /* 33 (24, 9); 241 = a tile and one */
    };
    char isa[32];
    snprintf(isa, sizeof isa, "%s", gx_cpu_gemm_isa());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t n = cases[i].n, c = cases[i].c, m = cases[i].m, l = cases[i].l;
        const int64_t k = cases[i].k, dil = cases[i].dil, pl = cases[i].pl, ph = cases[i].ph;
        const int64_t g = cases[i].group, out = l + pl + ph - (k - 1) * dil;
        gx_view in[3] = {s_rand(GX_F32, SHAPE(n, c, l)), s_rand(GX_F32, SHAPE(m, c / g, k)),
                         s_rand(GX_F32, SHAPE(m))};
        const gx_node *node = NODE(A_INT("group", g), A_INTS("pads", pl, ph),
                                   A_INTS("dilations", dil), A_INTS("kernel_shape", k));
        gx_view want = s_ref_conv(GX_F32, &in[0], &in[1], cases[i].bias ? &in[2] : NULL, g,
                                  &(s_geo){.d = {dil}, .pl = {pl}}, NULL, NULL,
                                  SHAPE(n, m, out));
        gx_view direct = {0}; /* the first 1-D kernel's output */
        for (int j = 0; gx_cpu_gemm_isa_name(j); j++) {
            const char *name = gx_cpu_gemm_isa_name(j);
            ck_assert(gx_cpu_gemm_isa_set(name));
            gx_view got;
            ot_check_threads(GX_OP_CONV, node, cases[i].bias ? 3 : 2, in, 1, &got);
            ck_assert_msg(s_close(&got, &want, 1e-4), "1-D case %zu (%s)", i, name);
            if (k > 32 || (strcmp(name, "avx512") && strcmp(name, "avx2")))
                continue;
            if (!direct.data)
                direct = got;
            else
                ck_assert_msg(!memcmp(got.data, direct.data, ot_nbytes(&got)),
                              "1-D case %zu: %s's bytes differ from the other 1-D kernel's", i,
                              name);
        }
        ot_free_all();
    }
    ck_assert(gx_cpu_gemm_isa_set(isa));
}
END_TEST

/* Large enough that the im2col of both images does not fit the scratch
 * budget together: two passes of one image, threads sharing each. */
START_TEST(test_conv_passes)
{
    s_conv_case(NODE(A_INTS("pads", 1, 1, 1, 1)), SHAPE(2, 16, 256, 280), SHAPE(2, 16, 3, 3),
                true, 1, (s_geo){.pl = {1, 1}}, SHAPE(2, 2, 256, 280));
}
END_TEST

START_TEST(test_conv_errors)
{
    gx_view x = RANDV(1, 4, 5, 5), w = RANDV(2, 4, 3, 3);
    ot_expect_error(GX_OP_CONV, NULL, 2, (gx_view[]){RANDV(4, 5), RANDV(2, 4)}, GX_ESHAPE,
                    "Conv: X is [4,5] and W is [2,4]; both need the same rank >= 3");
    ot_expect_error(GX_OP_CONV, NULL, 2, (gx_view[]){x, RANDV(2, 4, 3)}, GX_ESHAPE,
                    "Conv: X is [1,4,5,5] and W is [2,4,3]; both need the same rank >= 3");
    ot_expect_error(GX_OP_CONV, NODE(A_INT("group", 3)), 2, (gx_view[]){x, w}, GX_ESHAPE,
                    "Conv: X has 4 channels, not a multiple of group 3");
    ot_expect_error(GX_OP_CONV, NODE(A_INT("group", 0)), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: group is 0, expected >= 1");
    ot_expect_error(GX_OP_CONV, NODE(A_INT("group", 2)), 2, (gx_view[]){x, w}, GX_ESHAPE,
                    "Conv: W is [2,4,3,3] but X is [1,4,5,5] with group 2 (W must be [M, C / "
                    "group, k...] with M a multiple of group)");
    ot_expect_error(GX_OP_CONV, NODE(A_INT("group", 2)), 2, (gx_view[]){x, RANDV(3, 2, 3, 3)},
                    GX_ESHAPE, NULL);
    ot_expect_error(GX_OP_CONV, NULL, 3, (gx_view[]){x, w, RANDV(3)}, GX_ESHAPE,
                    "Conv: B is [3], expected [2]");
    ot_expect_error(GX_OP_CONV, NULL, 3, (gx_view[]){x, w, ot_rand(GX_F64, SHAPE(2))}, GX_EDTYPE,
                    "Conv: B is float64, expected float32 like X");
    ot_expect_error(GX_OP_CONV, NULL, 2, (gx_view[]){ot_rand(GX_F64, SHAPE(1, 4, 5, 5)), w},
                    GX_EDTYPE, "Conv: float64 not supported (float32 only)");
    ot_expect_error(GX_OP_CONV, NODE(A_STR("auto_pad", "SAME")), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: auto_pad is 'SAME', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    ot_expect_error(GX_OP_CONV, NODE(A_STR("auto_pad", "VALID"), A_INTS("pads", 0, 1, 0, 0)), 2,
                    (gx_view[]){x, w}, GX_EATTR,
                    "Conv: pads and auto_pad=VALID are exclusive");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("pads", 1, 1)), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: pads has 2 values, expected 4");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("pads", 1, 1, -1, 0)), 2, (gx_view[]){x, w},
                    GX_EATTR, "Conv: pads[2] is -1, expected 0..2147483647");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("strides", 1, 0)), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: strides[1] is 0, expected 1..2147483647");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("dilations", 1)), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: dilations has 1 values, expected 2");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("kernel_shape", 3, 2)), 2, (gx_view[]){x, w},
                    GX_EATTR, "Conv: kernel_shape[1] is 2 but the weights have 3");
    ot_expect_error(GX_OP_CONV, NODE(A_INTS("dilations", 3, 1)), 2, (gx_view[]){x, w}, GX_ESHAPE,
                    "Conv: spatial dim 0 of X is 5, padded 5, smaller than the kernel's extent 7");
    ot_expect_error(GX_OP_CONV, NULL, 2, (gx_view[]){x, RANDV(2, 4, 0, 3)}, GX_ESHAPE,
                    "Conv: kernel dim 0 is 0, expected 1..2147483647");
    ot_expect_error(GX_OP_CONV, NODE(A_INT("groups", 1)), 2, (gx_view[]){x, w}, GX_EATTR,
                    "Conv: unknown attribute 'groups'");
    ot_expect_error(GX_OP_CONV,
                    NODE(A_INTS("pads", 0, 0, 0, 0, 0, 0, 2147483647, 2147483647, 2147483647,
                                2147483647, 2147483647, 2147483647)),
                    2, (gx_view[]){RANDV(1, 1, 1, 1, 1, 1, 1, 1), RANDV(1, 1, 1, 1, 1, 1, 1, 1)},
                    GX_ELIMIT, "Conv: the spatial sizes overflow");
}
END_TEST

/* ---- ConvTranspose ---- */

START_TEST(test_convtranspose_node_cases)
{
    gx_view x = s_iota(0, SHAPE(1, 1, 3, 3)), w = s_ones(SHAPE(1, 2, 3, 3));
    s_expect(GX_OP_CONVTRANSPOSE, NULL, 2, (gx_view[]){x, w},
             F32V(SHAPE(1, 2, 5, 5), 0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33,
                  24, 13, 6, 13, 21, 15, 8, 0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9,
                  20, 33, 24, 13, 6, 13, 21, 15, 8),
             0);
    s_expect(GX_OP_CONVTRANSPOSE, NODE(A_INTS("pads", 1, 2, 1, 2), A_INTS("strides", 3, 2)), 2,
             (gx_view[]){x, w},
             F32V(SHAPE(1, 2, 7, 3), 1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7,
                  15, 1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15),
             0);
    s_expect(GX_OP_CONVTRANSPOSE, NULL, 2,
             (gx_view[]){s_iota(0, SHAPE(1, 1, 3)), s_ones(SHAPE(1, 2, 3))},
             F32V(SHAPE(1, 2, 5), 0, 1, 3, 3, 2, 0, 1, 3, 3, 2), 0);
    s_expect(GX_OP_CONVTRANSPOSE, NODE(A_INTS("dilations", 2, 2)), 2,
             (gx_view[]){F32V(SHAPE(1, 1, 3, 3), 3, 8, 1, 9, 5, 7, 3, 2, 6),
                         F32V(SHAPE(1, 1, 2, 2), 7, 2, 1, 9)},
             F32V(SHAPE(1, 1, 5, 5), 21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76, 21, 9,
                  5, 88, 45, 63, 3, 2, 33, 18, 54),
             0);
    /* output_shape beyond the full result: the extra row and column get 0 */
    const s_geo g0 = {.s = {3, 2}};
    gx_view full = s_ref_convtranspose(&x, &w, NULL, 1, &g0, SHAPE(1, 2, 10, 8));
    ck_assert_float_eq(((float *)full.data)[8 * 3 + 2], 7);
    s_expect(GX_OP_CONVTRANSPOSE, NODE(A_INTS("output_shape", 10, 8), A_INTS("strides", 3, 2)),
             2, (gx_view[]){x, w}, full, 0);
    s_expect(GX_OP_CONVTRANSPOSE,
             NODE(A_INTS("output_shape", 1, 2, 10, 8), A_INTS("strides", 3, 2),
                  A_INTS("kernel_shape", 3, 3), A_INTS("output_padding", 1, 1)),
             2, (gx_view[]){x, w}, full, 0);
    s_expect(GX_OP_CONVTRANSPOSE, NODE(A_INTS("output_padding", 1, 1), A_INTS("strides", 3, 2)),
             2, (gx_view[]){x, w}, full, 0);
    /* SAME_UPPER: y = x * stride, the odd padding at the end */
    s_expect(GX_OP_CONVTRANSPOSE, NODE(A_STR("auto_pad", "SAME_UPPER"), A_INTS("strides", 2, 2)),
             2, (gx_view[]){x, w},
             F32V(SHAPE(1, 2, 6, 6), 0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5, 12, 7, 3, 3,
                  7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8, 0, 0, 1, 1, 3, 2, 0, 0, 1,
                  1, 3, 2, 3, 3, 8, 5, 12, 7, 3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7,
                  15, 8),
             0);
}
END_TEST

static void s_convtranspose_case(const gx_node *node, int nx, const int64_t *xs, int nw,
                                 const int64_t *ws, bool bias, int64_t group, s_geo g, int ny,
                                 const int64_t *ys)
{
    gx_view in[3] = {s_rand(GX_F32, nx, xs), s_rand(GX_F32, nw, ws),
                     s_rand(GX_F32, SHAPE(ws[1] * group))};
    gx_view want = s_ref_convtranspose(&in[0], &in[1], bias ? &in[2] : NULL, group, &g, ny, ys);
    s_expect(GX_OP_CONVTRANSPOSE, node, bias ? 3 : 2, in, want, 1e-4);
    ot_free_all(); /* everything above was made here */
}

START_TEST(test_convtranspose_reference)
{
    s_convtranspose_case(NULL, SHAPE(2, 3, 4, 5), SHAPE(3, 2, 3, 3), true, 1, (s_geo){0},
                         SHAPE(2, 2, 6, 7));
    /* strides, dilations, pads, output_padding */
    s_convtranspose_case(NODE(A_INTS("strides", 2, 3), A_INTS("dilations", 1, 2),
                              A_INTS("pads", 1, 0, 0, 2), A_INTS("output_padding", 1, 0)),
                         SHAPE(1, 2, 4, 3), SHAPE(2, 3, 3, 2), true, 1,
                         (s_geo){.s = {2, 3}, .d = {1, 2}, .pl = {1, 0}}, SHAPE(1, 3, 9, 7));
    /* groups */
    s_convtranspose_case(NODE(A_INT("group", 2), A_INTS("strides", 2, 2)), SHAPE(2, 4, 3, 3),
                         SHAPE(4, 3, 2, 2), true, 2, (s_geo){.s = {2, 2}}, SHAPE(2, 6, 6, 6));
    /* depthwise */
    s_convtranspose_case(NODE(A_INT("group", 3)), SHAPE(1, 3, 4, 4), SHAPE(3, 1, 3, 3), false, 3,
                         (s_geo){0}, SHAPE(1, 3, 6, 6));
    /* 1-D and 3-D */
    s_convtranspose_case(NODE(A_INTS("strides", 3), A_INTS("pads", 1, 1)), SHAPE(2, 2, 5),
                         SHAPE(2, 3, 4), true, 1, (s_geo){.s = {3}, .pl = {1}}, SHAPE(2, 3, 14));
    s_convtranspose_case(NODE(A_INTS("strides", 1, 2, 1)), SHAPE(1, 1, 3, 4, 5),
                         SHAPE(1, 2, 3, 3, 3), false, 1, (s_geo){.s = {1, 2, 1}},
                         SHAPE(1, 2, 5, 9, 7));
    /* output_shape with an odd total padding: NOTSET and SAME_LOWER put the
     * extra at the start, SAME_UPPER at the end */
    s_convtranspose_case(NODE(A_INTS("output_shape", 5, 6), A_INTS("strides", 2, 2)),
                         SHAPE(1, 1, 3, 3), SHAPE(1, 1, 2, 2), false, 1,
                         (s_geo){.s = {2, 2}, .pl = {1, 0}}, SHAPE(1, 1, 5, 6));
    s_convtranspose_case(NODE(A_INTS("output_shape", 5, 6), A_INTS("strides", 2, 2),
                              A_STR("auto_pad", "SAME_UPPER")),
                         SHAPE(1, 1, 3, 3), SHAPE(1, 1, 2, 2), false, 1,
                         (s_geo){.s = {2, 2}, .pl = {0, 0}}, SHAPE(1, 1, 5, 6));
    s_convtranspose_case(NODE(A_STR("auto_pad", "SAME_LOWER"), A_INTS("strides", 2, 2)),
                         SHAPE(1, 1, 3, 3), SHAPE(1, 1, 3, 3), false, 1,
                         (s_geo){.s = {2, 2}, .pl = {1, 1}}, SHAPE(1, 1, 6, 6));
    /* a stride wider than the kernel leaves gaps */
    s_convtranspose_case(NODE(A_INTS("strides", 4)), SHAPE(1, 2, 3), SHAPE(2, 1, 2), true, 1,
                         (s_geo){.s = {4}}, SHAPE(1, 1, 10));
}
END_TEST

START_TEST(test_convtranspose_errors)
{
    gx_view x = RANDV(1, 2, 3, 3), w = RANDV(2, 3, 3, 3);
    ot_expect_error(GX_OP_CONVTRANSPOSE, NULL, 2, (gx_view[]){x, RANDV(3, 2, 3, 3)}, GX_ESHAPE,
                    "ConvTranspose: W is [3,2,3,3] but X is [1,2,3,3] with group 1 (W must be "
                    "[C, M / group, k...])");
    ot_expect_error(GX_OP_CONVTRANSPOSE, NODE(A_INTS("output_padding", 1, 0)), 2,
                    (gx_view[]){x, w}, GX_EATTR,
                    "ConvTranspose: output_padding[0] is 1, not below the stride 1 or the "
                    "dilation 1");
    ot_expect_error(GX_OP_CONVTRANSPOSE, NODE(A_INTS("output_shape", 5, 5, 5)), 2,
                    (gx_view[]){x, w}, GX_EATTR,
                    "ConvTranspose: output_shape has 3 values, expected 2 or 4");
    ot_expect_error(GX_OP_CONVTRANSPOSE, NODE(A_INTS("pads", 3, 0, 3, 0)), 2, (gx_view[]){x, w},
                    GX_ESHAPE, "ConvTranspose: the pads of spatial dim 0 exceed its extent 5");
    ot_expect_error(GX_OP_CONVTRANSPOSE, NULL, 3, (gx_view[]){x, w, RANDV(2)}, GX_ESHAPE,
                    "ConvTranspose: B is [2], expected [3]");
    ot_expect_error(GX_OP_CONVTRANSPOSE, NODE(A_INTS("kernel_shape", 2, 2)), 2,
                    (gx_view[]){x, w}, GX_EATTR,
                    "ConvTranspose: kernel_shape[0] is 2 but the weights have 3");
}
END_TEST

/* ---- ConvInteger ---- */

START_TEST(test_convinteger)
{
    gx_view x = TYPED(GX_U8, SHAPE(1, 1, 3, 3), 2, 3, 4, 5, 6, 7, 8, 9, 10);
    gx_view w = TYPED(GX_U8, SHAPE(1, 1, 2, 2), 1, 1, 1, 1);
    gx_view xz = TYPED(GX_U8, SHAPE(), 1);
    s_expect(GX_OP_CONVINTEGER, NULL, 3, (gx_view[]){x, w, xz},
             TYPED(GX_I32, SHAPE(1, 1, 2, 2), 12, 16, 24, 28), 0);
    s_expect(GX_OP_CONVINTEGER, NODE(A_INTS("pads", 1, 1, 1, 1)), 3, (gx_view[]){x, w, xz},
             TYPED(GX_I32, SHAPE(1, 1, 4, 4), 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17,
                   9),
             0);
    /* no zero points */
    s_expect(GX_OP_CONVINTEGER, NULL, 2, (gx_view[]){x, w},
             TYPED(GX_I32, SHAPE(1, 1, 2, 2), 16, 20, 28, 32), 0);
    /* int8 with per-channel w_zero_point, groups, strides, pads */
    gx_view xi = s_rand(GX_I8, SHAPE(2, 4, 7, 6)), wi = s_rand(GX_I8, SHAPE(6, 2, 3, 2));
    gx_view xzi = TYPED(GX_I8, SHAPE(1), -3), wzi = TYPED(GX_I8, SHAPE(6), 1, -2, 0, 5, 7, -1);
    const double xzv = -3;
    gx_view want = s_ref_conv(GX_I32, &xi, &wi, NULL, 2,
                              &(s_geo){.s = {2, 1}, .pl = {1, 0}}, &xzv, &wzi, SHAPE(2, 6, 4, 6));
    s_expect(GX_OP_CONVINTEGER,
             NODE(A_INT("group", 2), A_INTS("strides", 2, 1), A_INTS("pads", 1, 0, 1, 1)), 4,
             (gx_view[]){xi, wi, xzi, wzi}, want, 0);
    /* uint8 x with int8 w, scalar w_zero_point */
    gx_view xu = s_rand(GX_U8, SHAPE(1, 3, 5)), wu = s_rand(GX_I8, SHAPE(2, 3, 2));
    const double xzu = 128;
    gx_view wz0 = TYPED(GX_I8, SHAPE(), 0);
    want = s_ref_conv(GX_I32, &xu, &wu, NULL, 1, &(s_geo){0}, &xzu, &wz0, SHAPE(1, 2, 4));
    s_expect(GX_OP_CONVINTEGER, NULL, 4, (gx_view[]){xu, wu, TYPED(GX_U8, SHAPE(), 128), wz0},
             want, 0);

    ot_expect_error(GX_OP_CONVINTEGER, NULL, 2, (gx_view[]){RANDV(1, 1, 3, 3), w}, GX_EDTYPE,
                    "ConvInteger: input 0 is float32, not supported (uint8 or int8)");
    ot_expect_error(GX_OP_CONVINTEGER, NULL, 3, (gx_view[]){x, w, TYPED(GX_I8, SHAPE(), 1)},
                    GX_EDTYPE, "ConvInteger: x_zero_point is int8 but X is uint8");
    ot_expect_error(GX_OP_CONVINTEGER, NULL, 4,
                    (gx_view[]){x, w, xz, TYPED(GX_U8, SHAPE(2), 1, 1)}, GX_ESHAPE,
                    "ConvInteger: w_zero_point is [2], expected a scalar or one value per "
                    "output channel");
}
END_TEST

/* ---- MaxPool ---- */

START_TEST(test_maxpool_node_cases)
{
    gx_view x = s_iota(1, SHAPE(1, 1, 5, 5)), x4 = s_iota(1, SHAPE(1, 1, 4, 4));
    gx_view want = F32V(SHAPE(1, 1, 5, 5), 13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25,
                        25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25);
    const gx_node *pads = NODE(A_INTS("kernel_shape", 5, 5), A_INTS("pads", 2, 2, 2, 2));
    s_expect(GX_OP_MAXPOOL, pads, 1, &x, want, 0);
    s_expect_n(GX_OP_MAXPOOL, pads, 1, &x, 2,
               (gx_view[]){want, TYPED(GX_I64, SHAPE(1, 1, 5, 5), 12, 13, 14, 14, 14, 17, 18, 19,
                                       19, 19, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24, 22, 23,
                                       24, 24, 24)},
               0);
    s_expect(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2)), 1, &x,
             F32V(SHAPE(1, 1, 2, 2), 7, 9, 17, 19), 0);
    s_expect_n(GX_OP_MAXPOOL,
               NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2),
                    A_INT("storage_order", 1)),
               1, &x, 2,
               (gx_view[]){F32V(SHAPE(1, 1, 2, 2), 7, 9, 17, 19),
                           TYPED(GX_I64, SHAPE(1, 1, 2, 2), 6, 16, 8, 18)},
               0);
    s_expect(GX_OP_MAXPOOL,
             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("strides", 2, 2),
                  A_STR("auto_pad", "SAME_UPPER")),
             1, &x, F32V(SHAPE(1, 1, 3, 3), 7, 9, 10, 17, 19, 20, 22, 24, 25), 0);
    s_expect(GX_OP_MAXPOOL,
             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("strides", 2, 2), A_INT("ceil_mode", 1)), 1,
             &x4, F32V(SHAPE(1, 1, 2, 2), 11, 12, 15, 16), 0);
    s_expect(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("dilations", 2, 2)), 1,
             &x4, F32V(SHAPE(1, 1, 2, 2), 11, 12, 15, 16), 0);
    gx_view xu = s_typed(GX_U8, SHAPE(1, 1, 5, 5), (double[]){1,  2,  3,  4,  5,  6,  7,
                                                              8,  9,  10, 11, 12, 13, 14,
                                                              15, 16, 17, 18, 19, 20, 21,
                                                              22, 23, 24, 25});
    double wv[25];
    for (int i = 0; i < 25; i++)
        wv[i] = ((float *)want.data)[i];
    s_expect(GX_OP_MAXPOOL, pads, 1, &xu, s_typed(GX_U8, SHAPE(1, 1, 5, 5), wv), 0);
}
END_TEST

/* One random pool against the reference. */
static void s_pool_case(gx_op op, int kind, int p, gx_dtype dt, const gx_node *node, int nx,
                        const int64_t *xs, const int64_t *k, s_geo g, int ny, const int64_t *ys,
                        double tol)
{
    gx_view x = s_rand(dt, nx, xs), ind;
    gx_view want[2];
    want[0] = s_ref_pool(kind, p, &x, k, &g, ny, ys, &ind);
    want[1] = ind;
    s_expect_n(op, node, 1, &x, op == GX_OP_MAXPOOL ? 2 : 1, want, tol);
    ot_free_all(); /* everything above was made here */
}

START_TEST(test_pool_reference)
{
    const gx_dtype types[] = {GX_F32, GX_F64, GX_F16};
    for (int ti = 0; ti < 3; ti++) {
        const gx_dtype dt = types[ti];
        const double tol = dt == GX_F16 ? 2e-3 : 1e-6;
        for (int kind = S_MAX; kind <= S_LP; kind++) {
            const gx_op op = kind == S_MAX ? GX_OP_MAXPOOL
                             : kind == S_LP ? GX_OP_LPPOOL
                                            : GX_OP_AVERAGEPOOL;
            const gx_attr cip = kind == S_LP ? A_INT("p", 3)
                                             : A_INT(kind == S_MAX ? "storage_order"
                                                                   : "count_include_pad",
                                                     kind == S_AVG_PAD);
            const int p = 3;
            /* pads, strides, several channels and images */
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 3, 2), A_INTS("pads", 1, 0, 2, 1),
                             A_INTS("strides", 2, 1), cip),
                        SHAPE(2, 3, 9, 8), (int64_t[]){3, 2},
                        (s_geo){.s = {2, 1}, .pl = {1, 0}, .ph = {2, 1}}, SHAPE(2, 3, 5, 8), tol);
            /* ceil_mode: the last window overhangs the end padding */
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1),
                             A_INTS("strides", 2, 3), A_INT("ceil_mode", 1), cip),
                        SHAPE(1, 2, 8, 9), (int64_t[]){3, 3},
                        (s_geo){.s = {2, 3}, .pl = {1, 1}, .ph = {1, 1}}, SHAPE(1, 2, 5, 4), tol);
            /* ceil_mode dropping a window that would start in the padding */
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 2), A_INTS("pads", 0, 1),
                             A_INTS("strides", 2), A_INT("ceil_mode", 1), cip),
                        SHAPE(1, 1, 4), (int64_t[]){2}, (s_geo){.s = {2}, .ph = {1}},
                        SHAPE(1, 1, 2), tol);
            /* dilations */
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 2, 3), A_INTS("dilations", 3, 2),
                             A_INTS("pads", 1, 1, 0, 1), cip),
                        SHAPE(1, 2, 8, 7), (int64_t[]){2, 3},
                        (s_geo){.d = {3, 2}, .pl = {1, 1}, .ph = {0, 1}}, SHAPE(1, 2, 6, 5), tol);
            /* auto_pad */
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 2, 3), A_STR("auto_pad", "SAME_LOWER"), cip),
                        SHAPE(1, 2, 5, 6), (int64_t[]){2, 3},
                        (s_geo){.pl = {1, 1}, .ph = {0, 1}}, SHAPE(1, 2, 5, 6), tol);
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 2, 3), A_INTS("strides", 2, 2),
                             A_STR("auto_pad", "SAME_UPPER"), cip),
                        SHAPE(1, 2, 5, 6), (int64_t[]){2, 3},
                        (s_geo){.s = {2, 2}, .pl = {0, 0}, .ph = {1, 1}}, SHAPE(1, 2, 3, 3), tol);
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 3, 2), A_INTS("strides", 2, 2),
                             A_STR("auto_pad", "VALID"), cip),
                        SHAPE(1, 1, 7, 6), (int64_t[]){3, 2}, (s_geo){.s = {2, 2}},
                        SHAPE(1, 1, 3, 3), tol);
            /* 1-D and 3-D */
            s_pool_case(op, kind, p, dt, NODE(A_INTS("kernel_shape", 2), cip), SHAPE(1, 3, 32),
                        (int64_t[]){2}, (s_geo){0}, SHAPE(1, 3, 31), tol);
            s_pool_case(op, kind, p, dt,
                        NODE(A_INTS("kernel_shape", 2, 2, 3), A_INTS("pads", 0, 1, 1, 1, 0, 1),
                             cip),
                        SHAPE(1, 2, 4, 5, 6), (int64_t[]){2, 2, 3},
                        (s_geo){.pl = {0, 1, 1}, .ph = {1, 0, 1}}, SHAPE(1, 2, 4, 5, 6), tol);
        }
    }
    /* int8 and uint8 MaxPool */
    s_pool_case(GX_OP_MAXPOOL, S_MAX, 0, GX_I8,
                NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1)), SHAPE(2, 2, 5, 6),
                (int64_t[]){3, 3}, (s_geo){.pl = {1, 1}, .ph = {1, 1}}, SHAPE(2, 2, 5, 6), 0);
    s_pool_case(GX_OP_MAXPOOL, S_MAX, 0, GX_U8,
                NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2)), SHAPE(1, 3, 8, 8),
                (int64_t[]){2, 2}, (s_geo){.s = {2, 2}}, SHAPE(1, 3, 4, 4), 0);
    /* LpPool's default p = 2 and p = 1 */
    s_pool_case(GX_OP_LPPOOL, S_LP, 2, GX_F32, NODE(A_INTS("kernel_shape", 3, 3)),
                SHAPE(1, 2, 5, 5), (int64_t[]){3, 3}, (s_geo){0}, SHAPE(1, 2, 3, 3), 1e-6);
    s_pool_case(GX_OP_LPPOOL, S_LP, 1, GX_F32,
                NODE(A_INTS("kernel_shape", 3, 3), A_INT("p", 1), A_INTS("strides", 2, 2)),
                SHAPE(1, 2, 5, 5), (int64_t[]){3, 3}, (s_geo){.s = {2, 2}}, SHAPE(1, 2, 2, 2),
                1e-6);
}
END_TEST

START_TEST(test_maxpool_column_major)
{
    /* storage_order 1 numbers the spatial dims column-major, per channel */
    gx_view x = s_rand(GX_F32, SHAPE(2, 2, 5, 4, 3)), ind;
    gx_view y = s_ref_pool(S_MAX, 0, &x, (int64_t[]){2, 2, 2}, &(s_geo){.s = {2, 1, 1}},
                           SHAPE(2, 2, 2, 3, 2), &ind);
    int64_t *pi = ind.data, idx[5];
    for (int64_t e = 0; e < ind.numel; e++) {
        int64_t r = pi[e], ch = r / 60;
        ot_unravel(r % 60, 3, (int64_t[]){5, 4, 3}, idx);
        pi[e] = ch * 60 + idx[0] + idx[1] * 5 + idx[2] * 20;
    }
    s_expect_n(GX_OP_MAXPOOL,
               NODE(A_INTS("kernel_shape", 2, 2, 2), A_INTS("strides", 2, 1, 1),
                    A_INT("storage_order", 1)),
               1, &x, 2, (gx_view[]){y, ind}, 0);
}
END_TEST

START_TEST(test_averagepool_node_cases)
{
    gx_view x = s_iota(1, SHAPE(1, 1, 5, 5)), x4 = s_iota(1, SHAPE(1, 1, 4, 4));
    s_expect(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 5, 5), A_INTS("pads", 2, 2, 2, 2)), 1,
             &x,
             F32V(SHAPE(1, 1, 5, 5), 7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5, 12, 12.5, 13,
                  13.5, 14, 14.5, 15, 15.5, 16, 16.5, 17, 17.5, 18, 18.5, 19),
             1e-6);
    s_expect(GX_OP_AVERAGEPOOL,
             NODE(A_INTS("kernel_shape", 5, 5), A_INTS("pads", 2, 2, 2, 2),
                  A_INT("count_include_pad", 1)),
             1, &x,
             F32V(SHAPE(1, 1, 5, 5), 2.52, 3.6, 4.8, 4.08, 3.24, 4.56, 6.4, 8.4, 7.04, 5.52, 7.2,
                  10, 13, 10.8, 8.4, 6.96, 9.6, 12.4, 10.24, 7.92, 6.12, 8.4, 10.8, 8.88, 6.84),
             1e-6);
    s_expect(GX_OP_AVERAGEPOOL,
             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("strides", 2, 2),
                  A_STR("auto_pad", "SAME_UPPER")),
             1, &x, F32V(SHAPE(1, 1, 3, 3), 4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22), 1e-6);
    s_expect(GX_OP_AVERAGEPOOL,
             NODE(A_INTS("kernel_shape", 3, 3), A_INTS("strides", 2, 2), A_INT("ceil_mode", 1)), 1,
             &x4, F32V(SHAPE(1, 1, 2, 2), 6, 7.5, 12, 13.5), 1e-6);
    s_expect(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2)), 1,
             &x, F32V(SHAPE(1, 1, 2, 2), 4, 6, 14, 16), 1e-6);
}
END_TEST

START_TEST(test_pool_shapes)
{
    /* the output shapes of the larger node tests */
    gx_view x = RANDV(1, 3, 32, 32);
    s_expect_shape(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 5, 5), A_INTS("strides", 3, 3)),
                   1, &x, SHAPE(1, 3, 10, 10));
    s_expect_shape(GX_OP_MAXPOOL,
                   NODE(A_INTS("kernel_shape", 2, 2), A_STR("auto_pad", "SAME_LOWER")), 1, &x,
                   SHAPE(1, 3, 32, 32));
    gx_view x28 = RANDV(1, 3, 28, 28);
    s_expect_shape(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 2, 2, 2, 2)),
                   1, &x28, SHAPE(1, 3, 30, 30));
    /* ceil_mode is ignored under auto_pad */
    s_expect_shape(GX_OP_MAXPOOL,
                   NODE(A_INTS("kernel_shape", 3), A_STR("auto_pad", "VALID"),
                        A_INTS("strides", 2), A_INT("ceil_mode", 1)),
                   1, (gx_view[]){RANDV(1, 1, 6)}, SHAPE(1, 1, 2));
    /* ResNet's stem pool: 112 -> 56 */
    s_expect_shape(GX_OP_MAXPOOL,
                   NODE(A_INTS("kernel_shape", 3, 3), A_INTS("pads", 1, 1, 1, 1),
                        A_INTS("strides", 2, 2)),
                   1, (gx_view[]){RANDV(1, 64, 112, 112)}, SHAPE(1, 64, 56, 56));
}
END_TEST

START_TEST(test_pool_errors)
{
    gx_view x = RANDV(1, 1, 5, 5);
    ot_expect_error(GX_OP_MAXPOOL, NULL, 1, &x, GX_EATTR,
                    "MaxPool: attribute 'kernel_shape' is required");
    ot_expect_error(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2)), 1, &x, GX_EATTR,
                    "AveragePool: kernel_shape has 1 values, expected 2");
    ot_expect_error(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INTS("pads", 2, 0, 0, 0)),
                    1, &x, GX_EATTR,
                    "MaxPool: window 0 of spatial dim 0 lies entirely in the padding");
    ot_expect_error(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 6, 2)), 1, &x, GX_ESHAPE,
                    "MaxPool: spatial dim 0 of X is 5, padded 5, smaller than the kernel's "
                    "extent 6");
    ot_expect_error(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INT("storage_order", 2)),
                    1, &x, GX_EATTR, "MaxPool: storage_order is 2, expected 0 or 1");
    ot_expect_error(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INT("ceil_mode", -1)),
                    1, &x, GX_EATTR, "AveragePool: ceil_mode is -1, expected 0 or 1");
    ot_expect_error(GX_OP_AVERAGEPOOL,
                    NODE(A_INTS("kernel_shape", 2, 2), A_INT("storage_order", 1)), 1, &x,
                    GX_EATTR, "AveragePool: unknown attribute 'storage_order'");
    ot_expect_error(GX_OP_LPPOOL, NODE(A_INTS("kernel_shape", 2, 2), A_INT("p", 0)), 1, &x,
                    GX_EATTR, "LpPool: p is 0, expected 1..64");
    ot_expect_error(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2, 2)), 1,
                    (gx_view[]){ot_rand(GX_I32, SHAPE(1, 1, 5, 5))}, GX_EDTYPE,
                    "MaxPool: input 0 is int32, not supported (float32, float64, float16, int8 "
                    "or uint8)");
    ot_expect_error(GX_OP_AVERAGEPOOL, NODE(A_INTS("kernel_shape", 2, 2)), 1,
                    (gx_view[]){ot_rand(GX_U8, SHAPE(1, 1, 5, 5))}, GX_EDTYPE,
                    "AveragePool: input 0 is uint8, not supported (float32, float64 or "
                    "float16)");
    ot_expect_error(GX_OP_MAXPOOL, NODE(A_INTS("kernel_shape", 2)), 1,
                    (gx_view[]){RANDV(3, 5)}, GX_ESHAPE,
                    "MaxPool: X is [3,5]; rank >= 3 needed ([N, C, spatial...])");
    ot_expect_error(GX_OP_GLOBALAVERAGEPOOL, NULL, 1, (gx_view[]){RANDV(5)}, GX_ESHAPE,
                    "GlobalAveragePool: X is [5]; rank >= 2 needed ([N, C, ...])");
    ot_expect_error(GX_OP_GLOBALLPPOOL, NODE(A_INT("p", 100)), 1, &x, GX_EATTR,
                    "GlobalLpPool: p is 100, expected 1..64");
}
END_TEST

/* ---- global pools ---- */

START_TEST(test_global_pools)
{
    gx_view x = s_iota(1, SHAPE(1, 1, 3, 3));
    s_expect(GX_OP_GLOBALAVERAGEPOOL, NULL, 1, &x, F32V(SHAPE(1, 1, 1, 1), 5), 0);
    s_expect(GX_OP_GLOBALMAXPOOL, NULL, 1, &x, F32V(SHAPE(1, 1, 1, 1), 9), 0);
    s_expect(GX_OP_GLOBALLPPOOL, NULL, 1, &x, F32V(SHAPE(1, 1, 1, 1), sqrtf(285)), 1e-6);
    /* random, against the windowed reference over the whole input */
    const gx_dtype types[] = {GX_F32, GX_F64, GX_F16};
    for (int ti = 0; ti < 3; ti++) {
        const double tol = types[ti] == GX_F16 ? 2e-3 : 1e-6;
        gx_view r = s_rand(types[ti], SHAPE(3, 5, 4, 7));
        const int64_t k[] = {4, 7};
        const s_geo g = {0};
        s_expect(GX_OP_GLOBALMAXPOOL, NULL, 1, &r,
                 s_ref_pool(S_MAX, 0, &r, k, &g, SHAPE(3, 5, 1, 1), NULL), tol);
        s_expect(GX_OP_GLOBALAVERAGEPOOL, NULL, 1, &r,
                 s_ref_pool(S_AVG, 0, &r, k, &g, SHAPE(3, 5, 1, 1), NULL), tol);
        s_expect(GX_OP_GLOBALLPPOOL, NODE(A_INT("p", 3)), 1, &r,
                 s_ref_pool(S_LP, 3, &r, k, &g, SHAPE(3, 5, 1, 1), NULL), tol);
    }
    /* rank 2 and 3 */
    gx_view x2 = RANDV(3, 4);
    s_expect(GX_OP_GLOBALAVERAGEPOOL, NULL, 1, &x2, x2, 1e-6);
    s_expect(GX_OP_GLOBALMAXPOOL, NULL, 1, (gx_view[]){F32V(SHAPE(1, 2, 3), 1, 5, 2, -1, -3, -2)},
             F32V(SHAPE(1, 2, 1), 5, -1), 0);
}
END_TEST

/* ---- MaxUnpool ---- */

START_TEST(test_maxunpool)
{
    gx_view i = TYPED(GX_I64, SHAPE(1, 1, 2, 2), 5, 7, 13, 15);
    const gx_node *node = NODE(A_INTS("kernel_shape", 2, 2), A_INTS("strides", 2, 2));
    s_expect(GX_OP_MAXUNPOOL, node, 2, (gx_view[]){F32V(SHAPE(1, 1, 2, 2), 1, 2, 3, 4), i},
             F32V(SHAPE(1, 1, 4, 4), 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4), 0);
    s_expect(GX_OP_MAXUNPOOL, node, 3,
             (gx_view[]){F32V(SHAPE(1, 1, 2, 2), 5, 6, 7, 8), i,
                         TYPED(GX_I64, SHAPE(4), 1, 1, 5, 5)},
             F32V(SHAPE(1, 1, 5, 5), 0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0,
                  0, 0, 0, 0, 0),
             0);
    /* MaxPool's indices round-trip, over several channels, in float64 */
    gx_view x = s_rand(GX_F64, SHAPE(2, 3, 6, 4)), ind;
    gx_view y = s_ref_pool(S_MAX, 0, &x, (int64_t[]){2, 2}, &(s_geo){.s = {2, 2}},
                           SHAPE(2, 3, 3, 2), &ind);
    gx_view want = s_typed(GX_F64, SHAPE(2, 3, 6, 4), (double[2 * 3 * 6 * 4]){0});
    for (int64_t e = 0; e < ind.numel; e++)
        ((double *)want.data)[((int64_t *)ind.data)[e]] = ((double *)y.data)[e];
    s_expect(GX_OP_MAXUNPOOL, node, 2, (gx_view[]){y, ind}, want, 0);
    /* pads shrink the default shape; out-of-range indices are skipped */
    s_expect(GX_OP_MAXUNPOOL,
             NODE(A_INTS("kernel_shape", 2), A_INTS("strides", 2), A_INTS("pads", 1, 0)), 2,
             (gx_view[]){F32V(SHAPE(1, 1, 3), 1, 2, 3), TYPED(GX_I64, SHAPE(1, 1, 3), 0, 9, -1)},
             F32V(SHAPE(1, 1, 5), 1, 0, 0, 0, 0), 0);
    /* output_shape not known yet: the node waits for run time */
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[1];
    char err[ERRLEN];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_MAXUNPOOL, node, av, err, ERRLEN), GX_OK);
    gx_view in[3] = {RANDV(1, 1, 2, 2), i, ot_view(GX_I64, NULL, SHAPE(4))};
    gx_infer ic = {.attr = av, .n_in = 3, .in = in, .n_out = 1, .out = out, .err = err,
                   .errlen = ERRLEN};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_MAXUNPOOL)->infer(&ic), GX_INFER_DYNAMIC);

    ot_expect_error(GX_OP_MAXUNPOOL, node, 2, (gx_view[]){RANDV(1, 1, 2, 2), RANDV(1, 1, 2, 2)},
                    GX_EDTYPE, "MaxUnpool: input 1 is float32, not supported (int64)");
    ot_expect_error(GX_OP_MAXUNPOOL, node, 2,
                    (gx_view[]){RANDV(1, 1, 2, 2), TYPED(GX_I64, SHAPE(1, 1, 2), 0, 0)}, GX_ESHAPE,
                    "MaxUnpool: I is [1,1,2], expected X's shape [1,1,2,2]");
    ot_expect_error(GX_OP_MAXUNPOOL, node, 3,
                    (gx_view[]){RANDV(1, 1, 2, 2), i, TYPED(GX_I64, SHAPE(4), 1, 2, 5, 5)},
                    GX_ESHAPE,
                    "MaxUnpool: output_shape is [1,2,5,5] but X is [1,1,2,2] (N and C must "
                    "match)");
    ot_expect_error(GX_OP_MAXUNPOOL, node, 3,
                    (gx_view[]){RANDV(1, 1, 2, 2), i, TYPED(GX_I64, SHAPE(4), 1, 1, 5, 3)},
                    GX_ESHAPE,
                    "MaxUnpool: output_shape is [1,1,5,3], smaller than the unpooled shape in "
                    "spatial dim 1 (4)");
    ot_expect_error(GX_OP_MAXUNPOOL, NULL, 2, (gx_view[]){RANDV(1, 1, 2, 2), i}, GX_EATTR,
                    "MaxUnpool: attribute 'kernel_shape' is required");
}
END_TEST

Suite *ops_conv_suite(void)
{
    Suite *s = suite_create("ops_conv");
    TCase *tc = tcase_create("ops_conv");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_conv_node_cases);
    tcase_add_test(tc, test_conv_reference);
    tcase_add_test(tc, test_conv_passes);
    tcase_add_test(tc, test_conv_1d);
    tcase_add_test(tc, test_conv_errors);
    tcase_add_test(tc, test_convtranspose_node_cases);
    tcase_add_test(tc, test_convtranspose_reference);
    tcase_add_test(tc, test_convtranspose_errors);
    tcase_add_test(tc, test_convinteger);
    tcase_add_test(tc, test_maxpool_node_cases);
    tcase_add_test(tc, test_pool_reference);
    tcase_add_test(tc, test_maxpool_column_major);
    tcase_add_test(tc, test_averagepool_node_cases);
    tcase_add_test(tc, test_pool_shapes);
    tcase_add_test(tc, test_pool_errors);
    tcase_add_test(tc, test_global_pools);
    tcase_add_test(tc, test_maxunpool);
    suite_add_tcase(s, tc);
    return s;
}
