/*
 * Op tests of the nn family (GX_OPS_NN in ops/op.h): hand-computed values
 * (many from the ONNX operator documentation), naive float64 references
 * written independently of the kernels (Resize's follows the ONNX
 * reference implementation step by step), every attribute variant, the
 * errors infer gives, and every kernel split into 3 and 7 shares that must
 * match one share bit for bit and write each output byte exactly once.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

#define A_FLOATS(key, ...)                                                    \
    ((gx_attr){.name = (char *)(key), .type = GX_ATTR_FLOATS,                 \
               .floats = (double[]){__VA_ARGS__},                             \
               .n = sizeof((double[]){__VA_ARGS__}) / sizeof(double)})

#define I64V(shape, ...)                                                      \
    ot_view(GX_I64, ot_copy((int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__})), shape)

#define I32V(shape, ...)                                                      \
    ot_view(GX_I32, ot_copy((int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__})), shape)

/* An omitted optional input. */
#define NONE ((gx_view){.ndim = -1})

static gx_view s_scalar(gx_dtype dt, const void *v)
{
    return ot_view(dt, ot_copy(v, gx_dtype_size(dt)), 0, NULL);
}

static gx_view s_f32_scalar(float v)
{
    return s_scalar(GX_F32, &v);
}

/* A float32 view of 0, 1, 2, ... */
static gx_view s_iota(int ndim, const int64_t *shape)
{
    gx_view v = ot_rand(GX_F32, ndim, shape);
    for (int64_t i = 0; i < v.numel; i++)
        ((float *)v.data)[i] = (float)i;
    return v;
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

static void s_ref_softmax(gx_op op, int axis, const gx_view *x, gx_view *y)
{
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t outer = x->numel / (n * inner);
    const float *px = x->data;
    float *py = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < inner; c++) {
            const float *xr = px + o * n * inner + c;
            float *yr = py + o * n * inner + c;
            int64_t at = 0;
            for (int64_t j = 1; j < n; j++)
                at = xr[j * inner] > xr[at * inner] ? j : at;
            double sum = 0;
            for (int64_t j = 0; j < n; j++)
                sum += exp((double)xr[j * inner] - xr[at * inner]);
            for (int64_t j = 0; j < n; j++) {
                const double d = (double)xr[j * inner] - xr[at * inner];
                yr[j * inner] = (float)(op == GX_OP_SOFTMAX      ? exp(d) / sum
                                        : op == GX_OP_LOGSOFTMAX ? d - log(sum)
                                                                 : (double)(j == at));
            }
        }
    }
}

START_TEST(test_softmax_family)
{
    static const gx_op ops[] = {GX_OP_SOFTMAX, GX_OP_LOGSOFTMAX, GX_OP_HARDMAX};
    gx_view x = RANDV(3, 37, 41), big = RANDV(2, 300, 5), row = RANDV(4, 700);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        for (int axis = -3; axis < 3; axis++) {
            gx_view want = ot_like_f32(&x);
            s_ref_softmax(ops[i], axis < 0 ? axis + 3 : axis, &x, &want);
            ot_check_f32(ops[i], NODE(A_INT("axis", axis)), 1, &x, &want, 2e-6f, 1e-6f);
        }
        gx_view want = ot_like_f32(&big);
        s_ref_softmax(ops[i], 1, &big, &want);
        ot_check_f32(ops[i], NODE(A_INT("axis", 1)), 1, &big, &want, 2e-6f, 1e-6f);
        want = ot_like_f32(&row);
        s_ref_softmax(ops[i], 1, &row, &want);
        ot_check_f32(ops[i], NULL, 1, &row, &want, 2e-6f, 1e-6f);
    }
    /* from the operator documentation: large inputs stay finite */
    gx_view large = F32V(SHAPE(2, 4), 0, 1, 2, 3, 10000, 10001, 10002, 10003);
    ot_expect(GX_OP_LOGSOFTMAX, NULL, 1, &large,
              F32V(SHAPE(2, 4), -3.4401896f, -2.4401896f, -1.4401897f, -0.44018975f,
                   -3.4401896f, -2.4401896f, -1.4401897f, -0.44018975f),
              1e-6f, 0);
    ot_expect(GX_OP_SOFTMAX, NULL, 1, &large,
              F32V(SHAPE(2, 4), 0.032058604f, 0.08714432f, 0.23688284f, 0.6439143f,
                   0.032058604f, 0.08714432f, 0.23688284f, 0.6439143f),
              1e-6f, 0);
    /* Hardmax: the first of equal maxima wins */
    gx_view ties = F32V(SHAPE(2, 4), 3, 1, 3, 0, -1, 2, 2, 2);
    ot_expect(GX_OP_HARDMAX, NULL, 1, &ties, F32V(SHAPE(2, 4), 1, 0, 0, 0, 0, 1, 0, 0), 0, 0);
    ot_expect(GX_OP_HARDMAX, NODE(A_INT("axis", 0)), 1, &ties,
              F32V(SHAPE(2, 4), 1, 0, 1, 0, 0, 1, 0, 1), 0, 0);
}
END_TEST

/* ---- BatchNormalization ---- */

/* Mean and population variance, in float64, of the elements of x whose
 * index has the same kept dims (reduced[d] false), one per group: group
 * ids count the kept dims in row-major order. */
static void s_ref_stats(const gx_view *x, const bool *reduced, double *mean, double *var,
                        int64_t *group_of)
{
    const float *px = x->data;
    int64_t ngroups = 1;
    for (int d = 0; d < x->ndim; d++)
        ngroups *= reduced[d] ? 1 : x->shape[d];
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t rest = i, g = 0, mul = 1;
        for (int d = x->ndim - 1; d >= 0; d--) {
            const int64_t idx = rest % x->shape[d];
            rest /= x->shape[d];
            if (!reduced[d]) {
                g += idx * mul;
                mul *= x->shape[d];
            }
        }
        group_of[i] = g;
    }
    int64_t *cnt = ot_alloc((size_t)ngroups * sizeof *cnt);
    for (int64_t g = 0; g < ngroups; g++)
        mean[g] = var[g] = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        mean[group_of[i]] += px[i];
        cnt[group_of[i]]++;
    }
    for (int64_t g = 0; g < ngroups; g++)
        mean[g] /= (double)cnt[g];
    for (int64_t i = 0; i < x->numel; i++)
        var[group_of[i]] += (px[i] - mean[group_of[i]]) * (px[i] - mean[group_of[i]]);
    for (int64_t g = 0; g < ngroups; g++)
        var[g] /= (double)cnt[g];
}

static gx_view s_positive(int64_t n)
{
    gx_view v = RANDV(n);
    for (int64_t i = 0; i < n; i++)
        ((float *)v.data)[i] = fabsf(((float *)v.data)[i]) + 0.1f;
    return v;
}

START_TEST(test_batchnorm)
{
    /* inference, from the operator documentation's example */
    gx_view in[5] = {F32V(SHAPE(1, 2, 1, 3), -1, 0, 1, 2, 3, 4), F32V(SHAPE(2), 1.0, 1.5),
                     F32V(SHAPE(2), 0, 1), F32V(SHAPE(2), 0, 3), F32V(SHAPE(2), 1, 1.5)};
    ot_expect(GX_OP_BATCHNORM, NULL, 5, in,
              F32V(SHAPE(1, 2, 1, 3), -0.999995f, 0, 0.999995f, -0.22474074f, 1, 2.2247407f),
              1e-6f, 0);
    /* inference against the reference, several spatial ranks */
    static const int64_t shapes[][5] = {{4, 3, 5, 7, 11}, {3, 2, 7, 0, 0}, {2, 37, 0, 0, 0}};
    static const int ranks[] = {5, 3, 2};
    for (int s = 0; s < 3; s++) {
        gx_view x = ot_rand(GX_F32, ranks[s], shapes[s]);
        const int64_t C = x.shape[1], S = x.numel / (x.shape[0] * C);
        gx_view bn[5] = {x, RANDV(C), RANDV(C), RANDV(C), s_positive(C)};
        gx_view want = ot_like_f32(&x);
        const float *sc = bn[1].data, *b = bn[2].data, *m = bn[3].data, *v = bn[4].data;
        for (int64_t i = 0; i < x.numel; i++) {
            int64_t c = i / S % C;
            ((float *)want.data)[i] = (float)((((float *)x.data)[i] - m[c]) /
                                                  sqrt(v[c] + 1e-3) * sc[c] + b[c]);
        }
        ot_check_f32(GX_OP_BATCHNORM, NODE(A_FLOAT("epsilon", 1e-3), A_INT("spatial", 1)), 5, bn,
                    &want, 1e-5f, 1e-5f);
    }
}
END_TEST

START_TEST(test_batchnorm_training)
{
    gx_view x = RANDV(3, 5, 4, 9);
    for (int64_t i = 0; i < x.numel; i++) /* an offset per channel */
        ((float *)x.data)[i] += (float)(i / 36 % 5);
    gx_view in[5] = {x, RANDV(5), RANDV(5), RANDV(5), s_positive(5)};
    const gx_node *node =
        NODE(A_INT("training_mode", 1), A_FLOAT("momentum", 0.8), A_FLOAT("epsilon", 1e-2));
    gx_view out[3];
    ot_check_threads(GX_OP_BATCHNORM, node, 5, in, 3, out);
    bool reduced[4] = {true, false, true, true};
    double mean[5], var[5];
    int64_t *group = ot_alloc((size_t)x.numel * sizeof *group);
    s_ref_stats(&x, reduced, mean, var, group);
    const float *sc = in[1].data, *b = in[2].data, *rm = in[3].data, *rv = in[4].data;
    gx_view want = ot_like_f32(&x);
    for (int64_t i = 0; i < x.numel; i++) {
        int64_t c = group[i];
        ((float *)want.data)[i] =
            (float)((((float *)x.data)[i] - mean[c]) / sqrt(var[c] + 1e-2) * sc[c] + b[c]);
    }
    ck_assert(ot_close(out[0].data, want.data, x.numel, 1e-5f, 1e-5f));
    float wm[5], wv[5];
    for (int c = 0; c < 5; c++) {
        wm[c] = (float)(rm[c] * 0.8 + mean[c] * 0.2);
        wv[c] = (float)(rv[c] * 0.8 + var[c] * 0.2);
    }
    ot_check_shape(&out[1], SHAPE(5));
    ot_check_shape(&out[2], SHAPE(5));
    ck_assert(ot_close(out[1].data, wm, 5, 1e-5f, 1e-6f));
    ck_assert(ot_close(out[2].data, wv, 5, 1e-5f, 1e-6f));
    /* Y alone in training mode uses the batch statistics too */
    ot_check_f32(GX_OP_BATCHNORM, node, 5, in, &want, 1e-5f, 1e-5f);
}
END_TEST

/* ---- RMSNormalization ---- */

START_TEST(test_rmsnorm)
{
    gx_view x = RANDV(3, 4, 5, 70);
    for (int axis = -3; axis < 0; axis++) {
        const int a = axis + 4, nn = 4 - a;
        const int64_t n = gx_shape_numel(nn, x.shape + a, INT64_MAX), rows = x.numel / n;
        /* scale: the whole normalised shape, or broadcast from its last dim */
        gx_view sc = axis == -1 ? ot_rand(GX_F32, 1, x.shape + 3) : ot_rand(GX_F32, nn, x.shape + a);
        gx_view want = ot_like_f32(&x);
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0;
            for (int64_t j = 0; j < n; j++) {
                const double v = ((float *)x.data)[r * n + j];
                ss += v * v;
            }
            const double inv = 1 / sqrt(ss / (double)n + 1e-6);
            for (int64_t j = 0; j < n; j++)
                ((float *)want.data)[r * n + j] =
                    (float)(((float *)x.data)[r * n + j] * inv * ((float *)sc.data)[j % sc.numel]);
        }
        gx_view in[2] = {x, sc};
        ot_check_f32(GX_OP_RMSNORM, NODE(A_INT("axis", axis), A_FLOAT("epsilon", 1e-6)), 2, in,
                    &want, 1e-5f, 1e-6f);
    }
    gx_view in[2] = {x, RANDV(5, 1)};
    ot_expect_error(GX_OP_RMSNORM, NULL, 2, in, GX_ESHAPE,
                    "RMSNormalization: scale of shape [5,1] does not broadcast to the normalised "
                    "shape [70]");
}
END_TEST

/* ---- Attention ---- */

/* One Attention case: shapes, mask (0 none, 1 float32, 2 bool) of rank
 * mnd and shape mshape, attributes (scale 0: the default). */
typedef struct s_attn_case {
    bool four;
    int64_t b, hq, hkv, s, skv, d, dv;
    int mask, mnd;
    int64_t mshape[4];
    bool causal;
    double scale, softcap;
    int64_t past;      /* keys of past_key / past_value (0: none) */
    int64_t nonpad[2]; /* nonpad_kv_seqlen per sample ({0}: none) */
} s_attn_case;

/* Element (b, h, i, e) of a Q, K, V or Y of heads × size in c's form. */
static int64_t s_attn_at(const s_attn_case *c, int64_t heads, int64_t seq, int64_t size,
                         int64_t b, int64_t h, int64_t i, int64_t e)
{
    return c->four ? ((b * heads + h) * seq + i) * size + e : (b * seq + i) * heads * size +
                                                                   h * size + e;
}

/* The ONNX reference's computation (onnx/reference/ops/op_attention.py)
 * in double: scale, softcap, the bias (mask padded with masked keys,
 * causal), softmax, · V. */
/* Key j of the keys attended (the cache's first) of K/V head hk of
 * sample b: element e of a row of `size`. */
static float s_attn_key(const s_attn_case *c, const float *past, const float *x, int64_t size,
                        int64_t b, int64_t hk, int64_t j, int64_t e)
{
    if (j < c->past)
        return past[((b * c->hkv + hk) * c->past + j) * size + e];
    return x[s_attn_at(c, c->hkv, c->skv, size, b, hk, j - c->past, e)];
}

static void s_attn_ref(const s_attn_case *c, const float *q, const float *k, const float *v,
                       const void *mask, const float *pk, const float *pv, float *y)
{
    const double scale = c->scale != 0 ? c->scale : 1 / sqrt((double)c->d);
    const int64_t total = c->past + c->skv;
    double *sc = malloc((size_t)total * sizeof *sc);
    const int64_t full[4] = {c->b, c->hq, c->s, total};
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < c->s; i++) {
                const int64_t hk = h / (c->hq / c->hkv);
                double mx = -INFINITY, sum = 0;
                const int64_t keys = c->nonpad[0] ? c->nonpad[b] : total;
                const int64_t offset = c->past ? c->past : c->nonpad[0] ? keys - c->s : 0;
                for (int64_t j = 0; j < total; j++) {
                    double x = 0;
                    for (int64_t e = 0; e < c->d; e++)
                        x += (double)q[s_attn_at(c, c->hq, c->s, c->d, b, h, i, e)] *
                             s_attn_key(c, pk, k, c->d, b, hk, j, e);
                    x *= scale;
                    if (c->softcap > 0)
                        x = c->softcap * tanh(x / c->softcap);
                    if (c->mask) {
                        const int64_t idx[4] = {b, h, i, j};
                        if (j >= c->mshape[c->mnd - 1]) {
                            x = -INFINITY;
                        } else {
                            int64_t off = 0;
                            for (int dd = 0; dd < c->mnd; dd++) {
                                const int64_t n = c->mshape[dd], at = idx[4 - c->mnd + dd];
                                off = off * n + (n == 1 && full[4 - c->mnd + dd] != 1 && dd <
                                                 c->mnd - 1 ? 0 : at);
                            }
                            if (c->mask == 1)
                                x += ((const float *)mask)[off];
                            else if (!((const bool *)mask)[off])
                                x = -INFINITY;
                        }
                    }
                    if ((c->causal && j > i + offset) || j >= keys)
                        x = -INFINITY;
                    sc[j] = x;
                    mx = x > mx ? x : mx;
                }
                for (int64_t j = 0; j < total; j++)
                    sum += sc[j] = exp(sc[j] - mx);
                for (int64_t e = 0; e < c->dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < total; j++)
                        acc += sc[j] * s_attn_key(c, pv, v, c->dv, b, hk, j, e);
                    y[s_attn_at(c, c->hq, c->s, c->dv, b, h, i, e)] = (float)(acc / sum);
                }
            }
    free(sc);
}

START_TEST(test_attention)
{
    static const s_attn_case cases[] = {
        {.four = true, .b = 2, .hq = 3, .hkv = 3, .s = 4, .skv = 6, .d = 8, .dv = 8},
        {.four = true, .b = 2, .hq = 9, .hkv = 3, .s = 4, .skv = 6, .d = 8, .dv = 8},
        {.four = true, .b = 2, .hq = 3, .hkv = 3, .s = 4, .skv = 6, .d = 8, .dv = 10},
        {.four = false, .b = 2, .hq = 4, .hkv = 2, .s = 5, .skv = 7, .d = 6, .dv = 5},
        {.four = true, .b = 1, .hq = 2, .hkv = 2, .s = 5, .skv = 7, .d = 8, .dv = 8, .mask = 1,
         .mnd = 2, .mshape = {5, 7}, .scale = 0.3},
        {.four = true, .b = 2, .hq = 2, .hkv = 1, .s = 5, .skv = 7, .d = 8, .dv = 8, .mask = 2,
         .mnd = 4, .mshape = {2, 1, 5, 7}},
        {.four = true, .b = 1, .hq = 2, .hkv = 2, .s = 3, .skv = 9, .d = 4, .dv = 4, .mask = 1,
         .mnd = 1, .mshape = {6}},
        {.four = true, .b = 1, .hq = 2, .hkv = 2, .s = 40, .skv = 40, .d = 16, .dv = 16,
         .causal = true},
        {.four = false, .b = 1, .hq = 2, .hkv = 2, .s = 40, .skv = 40, .d = 8, .dv = 8,
         .causal = true, .mask = 2, .mnd = 2, .mshape = {40, 40}},
        /* several chunks of keys (online softmax), a mask of large values */
        {.four = true, .b = 1, .hq = 2, .hkv = 1, .s = 37, .skv = 600, .d = 64, .dv = 24,
         .mask = 1, .mnd = 3, .mshape = {1, 37, 600}},
        {.four = true, .b = 1, .hq = 1, .hkv = 1, .s = 6, .skv = 300, .d = 100, .dv = 17,
         .softcap = 2.0, .scale = 0.5},
        /* a KV cache (causal after it; the chunk straddling its end), and
         * nonpad_kv_seqlen (opset 24) with and without one */
        {.four = true, .b = 2, .hq = 4, .hkv = 2, .s = 3, .skv = 3, .d = 8, .dv = 6, .past = 5,
         .causal = true},
        {.four = false, .b = 1, .hq = 2, .hkv = 2, .s = 2, .skv = 2, .d = 64, .dv = 8,
         .past = 300, .mask = 1, .mnd = 2, .mshape = {2, 290}},
        {.four = true, .b = 2, .hq = 2, .hkv = 2, .s = 4, .skv = 9, .d = 8, .dv = 8,
         .causal = true, .nonpad = {7, 9}},
        {.four = true, .b = 2, .hq = 2, .hkv = 1, .s = 2, .skv = 2, .d = 8, .dv = 8, .past = 4,
         .nonpad = {5, 3}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const s_attn_case *c = &cases[ci];
        gx_view in[7];
        if (c->four) {
            in[0] = ot_rand(GX_F32, SHAPE(c->b, c->hq, c->s, c->d));
            in[1] = ot_rand(GX_F32, SHAPE(c->b, c->hkv, c->skv, c->d));
            in[2] = ot_rand(GX_F32, SHAPE(c->b, c->hkv, c->skv, c->dv));
        } else {
            in[0] = ot_rand(GX_F32, SHAPE(c->b, c->s, c->hq * c->d));
            in[1] = ot_rand(GX_F32, SHAPE(c->b, c->skv, c->hkv * c->d));
            in[2] = ot_rand(GX_F32, SHAPE(c->b, c->skv, c->hkv * c->dv));
        }
        int n_in = 3;
        in[3] = in[4] = in[5] = in[6] = NONE;
        if (c->mask) {
            in[3] = ot_rand(c->mask == 1 ? GX_F32 : GX_BOOL, c->mnd, c->mshape);
            n_in = 4;
            if (c->mask == 2) /* about a third masked, never a whole row */
                for (int64_t i = 0; i < in[3].numel; i++)
                    ((bool *)in[3].data)[i] = i % c->mshape[c->mnd - 1] == 0 || ot_randf() > -0.6f;
        }
        if (c->past) {
            in[4] = ot_rand(GX_F32, SHAPE(c->b, c->hkv, c->past, c->d));
            in[5] = ot_rand(GX_F32, SHAPE(c->b, c->hkv, c->past, c->dv));
            n_in = 6;
        }
        if (c->nonpad[0]) {
            in[6] = ot_view(GX_I64, ot_copy(c->nonpad, sizeof c->nonpad), SHAPE(c->b));
            n_in = 7;
        }
        gx_attr attrs[5];
        int na = 0;
        if (!c->four) {
            attrs[na++] = A_INT("q_num_heads", c->hq);
            attrs[na++] = A_INT("kv_num_heads", c->hkv);
        }
        if (c->causal)
            attrs[na++] = A_INT("is_causal", 1);
        if (c->scale != 0)
            attrs[na++] = A_FLOAT("scale", c->scale);
        if (c->softcap != 0)
            attrs[na++] = A_FLOAT("softcap", c->softcap);
        gx_view want = c->four ? ot_rand(GX_F32, SHAPE(c->b, c->hq, c->s, c->dv))
                               : ot_rand(GX_F32, SHAPE(c->b, c->s, c->hq * c->dv));
        s_attn_ref(c, in[0].data, in[1].data, in[2].data, c->mask ? in[3].data : NULL,
                   in[4].data, in[5].data, want.data);
        const gx_node *node = &(gx_node){.n_attr = na, .attr = attrs};
        if (!c->past) {
            ot_check_f32(GX_OP_ATTENTION, node, n_in, in, &want, 1e-4f, 1e-5f);
            continue;
        }
        /* present_key and present_value: the cache, then K and V, as 4-D */
        gx_view out[3];
        ot_check_threads(GX_OP_ATTENTION, node, n_in, in, 3, out);
        ck_assert_msg(ot_close(out[0].data, want.data, want.numel, 1e-4f, 1e-5f), "case %zu", ci);
        const int64_t total = c->past + c->skv;
        for (int o = 1; o <= 2; o++) {
            const int64_t size = o == 1 ? c->d : c->dv;
            ot_check_shape(&out[o], 4, (int64_t[]){c->b, c->hkv, total, size});
            for (int64_t r = 0; r < c->b * c->hkv * total; r++)
                for (int64_t e = 0; e < size; e++)
                    ck_assert(((float *)out[o].data)[r * size + e] ==
                              s_attn_key(c, in[3 + o].data, in[o].data, size,
                                         r / total / c->hkv, r / total % c->hkv, r % total, e));
        }
    }
    /* a row with every key masked has no weights: NaN, as the reference */
    gx_view m = ot_view(GX_BOOL, ot_copy((bool[]){true, true, false, false}, 4), SHAPE(2, 2));
    gx_view in[4] = {RANDV(1, 1, 2, 4), RANDV(1, 1, 2, 4), RANDV(1, 1, 2, 4), m};
    gx_view out;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_ATTENTION, NULL, 4, in, 2, av, &out, err), GX_OK);
    for (int e = 0; e < 4; e++) {
        ck_assert(isfinite(((float *)out.data)[e]));
        ck_assert(isnan(((float *)out.data)[4 + e]));
    }
}
END_TEST

/* ---- LayerNormalization, InstanceNormalization, MVN ---- */

START_TEST(test_layernorm)
{
    gx_view x = RANDV(3, 4, 5, 70);
    for (int64_t i = 0; i < x.numel; i++)
        ((float *)x.data)[i] += 10.0f; /* a mean far from 0 */
    for (int axis = -4; axis < 4; axis++) {
        const int a = axis < 0 ? axis + 4 : axis;
        const int nn = 4 - a;
        bool reduced[4];
        for (int d = 0; d < 4; d++)
            reduced[d] = d >= a;
        const int64_t rows = gx_shape_numel(a, x.shape, INT64_MAX), n = x.numel / rows;
        double *mean = ot_alloc((size_t)rows * sizeof(double)),
               *var = ot_alloc((size_t)rows * sizeof(double));
        int64_t *group = ot_alloc((size_t)x.numel * sizeof *group);
        s_ref_stats(&x, reduced, mean, var, group);
        /* scale the full normalised shape; B broadcast from its last dim */
        gx_view sc = ot_rand(GX_F32, nn, x.shape + a), b = ot_rand(GX_F32, 1, x.shape + 3);
        gx_view want[3] = {ot_like_f32(&x)};
        int64_t st[4];
        for (int d = 0; d < 4; d++)
            st[d] = d < a ? x.shape[d] : 1;
        want[1] = ot_rand(GX_F32, 4, st);
        want[2] = ot_rand(GX_F32, 4, st);
        for (int64_t i = 0; i < x.numel; i++) {
            const int64_t r = i / n, j = i % n;
            const double inv = 1 / sqrt(var[r] + 1e-5);
            ((float *)want[0].data)[i] =
                (float)((((float *)x.data)[i] - mean[r]) * inv * ((float *)sc.data)[j] +
                        ((float *)b.data)[i % x.shape[3]]);
            ((float *)want[1].data)[r] = (float)mean[r];
            ((float *)want[2].data)[r] = (float)inv;
        }
        gx_view out[3];
        gx_view in[3] = {x, sc, b};
        ot_check_threads(GX_OP_LAYERNORM, NODE(A_INT("axis", axis)), 3, in, 3, out);
        for (int o = 0; o < 3; o++) {
            ot_check_shape(&out[o], want[o].ndim, want[o].shape);
            ck_assert_msg(ot_close(out[o].data, want[o].data, want[o].numel, 1e-5f, 1e-5f),
                          "axis %d output %d", axis, o);
        }
    }
    /* last axis, no B, scale broadcast from [1]; float64 statistics */
    gx_view sm = F32V(SHAPE(2, 3), 1, 2, 3, 4, 4, 4);
    gx_view in2[2] = {sm, F32V(SHAPE(1), 2)};
    const float k = (float)(2 / sqrt(2.0 / 3 + 1e-5));
    ot_expect(GX_OP_LAYERNORM, NULL, 2, in2, F32V(SHAPE(2, 3), -k, 0, k, 0, 0, 0), 1e-6f, 1e-6f);
    gx_view out[3];
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_LAYERNORM, NODE(A_INT("stash_type", 11)), 2, in2, 1, av, 3,
                              out, err),
                     GX_OK);
    ck_assert(out[1].dtype == GX_F64 && out[2].dtype == GX_F64);
    ck_assert(((double *)out[1].data)[0] == 2 && ((double *)out[1].data)[1] == 4);
    ck_assert(fabs(((double *)out[2].data)[1] - 1 / sqrt(1e-5)) < 1e-6);
}
END_TEST

START_TEST(test_instancenorm)
{
    /* from the operator documentation's example */
    gx_view in[3] = {F32V(SHAPE(1, 2, 1, 3), -1, 0, 1, 2, 3, 4), F32V(SHAPE(2), 1.0, 1.5),
                     F32V(SHAPE(2), 0, 1)};
    ot_expect(GX_OP_INSTANCENORM, NULL, 3, in,
              F32V(SHAPE(1, 2, 1, 3), -1.2247356f, 0, 1.2247356f, -0.8371035f, 1, 2.8371034f),
              1e-6f, 0);
    gx_view x = RANDV(3, 4, 33, 17);
    gx_view in2[3] = {x, RANDV(4), RANDV(4)};
    bool reduced[4] = {false, false, true, true};
    double mean[12], var[12];
    int64_t *group = ot_alloc((size_t)x.numel * sizeof *group);
    s_ref_stats(&x, reduced, mean, var, group);
    gx_view want = ot_like_f32(&x);
    for (int64_t i = 0; i < x.numel; i++) {
        const int64_t g = group[i], c = g % 4;
        ((float *)want.data)[i] = (float)((((float *)x.data)[i] - mean[g]) /
                                              sqrt(var[g] + 0.05) * ((float *)in2[1].data)[c] +
                                          ((float *)in2[2].data)[c]);
    }
    ot_check_f32(GX_OP_INSTANCENORM, NODE(A_FLOAT("epsilon", 0.05)), 3, in2, &want, 1e-5f, 1e-5f);
}
END_TEST

START_TEST(test_mvn)
{
    gx_view x = RANDV(3, 4, 5, 6);
    static const int64_t axes_sets[][4] = {{0, 2, 3}, {1}, {0, 2}, {3}, {-1, -2}, {0, 1, 2, 3}};
    static const size_t nsets[] = {3, 1, 2, 1, 2, 4};
    for (int s = 0; s < 6; s++) {
        bool reduced[4] = {false};
        for (size_t i = 0; i < nsets[s]; i++)
            reduced[(axes_sets[s][i] + 4) % 4] = true;
        double mean[360], var[360];
        int64_t *group = ot_alloc((size_t)x.numel * sizeof *group);
        s_ref_stats(&x, reduced, mean, var, group);
        gx_view want = ot_like_f32(&x);
        for (int64_t i = 0; i < x.numel; i++)
            ((float *)want.data)[i] =
                (float)((((float *)x.data)[i] - mean[group[i]]) / (sqrt(var[group[i]]) + 1e-9));
        gx_attr a = {.name = "axes", .type = GX_ATTR_INTS, .ints = (int64_t *)axes_sets[s],
                     .n = nsets[s]};
        const gx_node *node = s == 0 ? NULL : &(gx_node){.n_attr = 1, .attr = &a};
        ot_check_f32(GX_OP_MVN, node, 1, &x, &want, 1e-5f, 1e-5f);
    }
}
END_TEST

/* ---- LRN ---- */

START_TEST(test_lrn)
{
    gx_view x = RANDV(2, 7, 5, 9);
    for (int size = 1; size <= 4; size++) {
        gx_view want = ot_like_f32(&x);
        const float *px = x.data;
        for (int64_t i = 0; i < x.numel; i++) {
            const int64_t c = i / 45 % 7, base = i - c * 45;
            double sq = 0;
            for (int64_t cc = c - (size - 1) / 2; cc <= c + size / 2; cc++)
                if (cc >= 0 && cc < 7)
                    sq += (double)px[base + cc * 45] * px[base + cc * 45];
            ((float *)want.data)[i] = (float)(px[i] / pow(1.5 + 0.01 / size * sq, 0.6));
        }
        ot_check_f32(GX_OP_LRN,
                    NODE(A_INT("size", size), A_FLOAT("alpha", 0.01), A_FLOAT("beta", 0.6),
                         A_FLOAT("bias", 1.5)),
                    1, &x, &want, 1e-5f, 1e-6f);
    }
    /* bases over many binades (the vectorised power takes a logarithm) */
    gx_view wide = RANDV(1, 3, 4099);
    for (int64_t i = 0; i < wide.numel; i++)
        ((float *)wide.data)[i] *= (float)pow(10, (double)(i % 97) / 12 - 3);
    gx_view want = ot_like_f32(&wide);
    for (int64_t i = 0; i < wide.numel; i++) {
        const float *pw = wide.data;
        const int64_t c = i / 4099, base = i - c * 4099;
        double sq = 0;
        for (int64_t cc = c - 1; cc <= c + 1; cc++)
            if (cc >= 0 && cc < 3)
                sq += (double)pw[base + cc * 4099] * pw[base + cc * 4099];
        ((float *)want.data)[i] = (float)(pw[i] / pow(1e-3 + 30.0 / 3 * sq, 0.75));
    }
    ot_check_f32(GX_OP_LRN, NODE(A_INT("size", 3), A_FLOAT("alpha", 30), A_FLOAT("bias", 1e-3)), 1,
                &wide, &want, 2e-6f, 0);
    /* an infinity makes its neighbours' bases infinite: libm's pow there */
    gx_view inf = F32V(SHAPE(1, 3, 2), 1, 2, INFINITY, 3, 4, 5);
    gx_view out;
    ot_check_threads(GX_OP_LRN, NODE(A_INT("size", 3)), 1, &inf, 1, &out);
    const float *po = out.data;
    ck_assert(po[0] == 0 && po[4] == 0 && isnan(po[2]));
    ck_assert(fabsf(po[1] - (float)(2 / pow(1 + 1e-4 / 3 * 13, 0.75))) < 1e-6f);
    /* defaults: alpha 1e-4, beta 0.75, bias 1 */
    gx_view one = F32V(SHAPE(1, 2, 1), 2, 4);
    ot_expect(GX_OP_LRN, NODE(A_INT("size", 3)), 1, &one,
              F32V(SHAPE(1, 2, 1), (float)(2 / pow(1 + 1e-4 / 3 * 20, 0.75)),
                   (float)(4 / pow(1 + 1e-4 / 3 * 20, 0.75))),
              1e-6f, 0);
}
END_TEST

/* ---- Dropout ---- */

START_TEST(test_dropout)
{
    gx_view x = RANDV(5, 77);
    gx_view out[2];
    ot_check_threads(GX_OP_DROPOUT, NULL, 1, &x, 2, out);
    ck_assert(memcmp(out[0].data, x.data, ot_nbytes(&x)) == 0);
    ck_assert_int_eq(out[1].dtype, GX_BOOL);
    for (int64_t i = 0; i < x.numel; i++)
        ck_assert(((bool *)out[1].data)[i]);
    /* a ratio input, training off, training with ratio 0: all copy */
    const bool t = true, f = false;
    gx_view in[3] = {x, s_f32_scalar(0.3f), s_scalar(GX_BOOL, &f)};
    ot_check_threads(GX_OP_DROPOUT, NODE(A_INT("seed", 3)), 3, in, 2, out);
    ck_assert(memcmp(out[0].data, x.data, ot_nbytes(&x)) == 0);
    in[1] = s_f32_scalar(0);
    in[2] = s_scalar(GX_BOOL, &t);
    ot_check_threads(GX_OP_DROPOUT, NULL, 3, in, 1, out);
    ck_assert(memcmp(out[0].data, x.data, ot_nbytes(&x)) == 0);
    /* the opset-7 ratio attribute, and float64 data */
    gx_view d = ot_rand(GX_F64, SHAPE(33));
    ot_check_threads(GX_OP_DROPOUT, NODE(A_FLOAT("ratio", 0.2)), 1, &d, 1, out);
    ck_assert(out[0].dtype == GX_F64 && memcmp(out[0].data, d.data, ot_nbytes(&d)) == 0);
}
END_TEST

/* ---- Resize and Upsample ---- */

/* The parameters of the reference: modes as in ONNX, per dim scale (the
 * reference's scale_factors), output size and roi. */
typedef struct s_rz {
    const char *mode, *coord, *nearest;
    double a;
    bool exclude;
    double extrap;
    int ndim;
    int64_t in[4], out[4];
    double scale[4], roi[8];
} s_rz;

/* The reference's _get_neighbor: the n indexes nearest to x in the edge-
 * padded data (ties to the lower), sorted; returns the first, unpadded. */
static int64_t s_rz_first_neighbour(double x, int n, int64_t len)
{
    const int pad = (n + 1) / 2;
    const int64_t plen = len + 2 * pad;
    bool taken[64] = {false};
    int64_t first = plen;
    for (int k = 0; k < n; k++) {
        int64_t best = -1;
        for (int64_t i = 0; i < plen; i++)
            if (!taken[i] && (best < 0 || fabs(x + pad - (double)i) < fabs(x + pad - (double)best)))
                best = i;
        taken[best] = true;
        first = best < first ? best : first;
    }
    return first - pad;
}

/* _interpolate_1d_with_x on data[0..len) at output index xo of dim d. */
static double s_rz_1d(const s_rz *p, int d, const double *data, int64_t xo)
{
    const double in = (double)p->in[d], s = p->scale[d], out = s * in, x = (double)xo;
    double xori;
    if (!strcmp(p->coord, "align_corners")) {
        xori = out == 1 ? 0 : x * (in - 1) / (out - 1);
    } else if (!strcmp(p->coord, "asymmetric")) {
        xori = x / s;
    } else if (!strcmp(p->coord, "tf_crop_and_resize")) {
        const double lo = p->roi[d], hi = p->roi[p->ndim + d];
        xori = out == 1 ? (hi - lo) * (in - 1) / 2 : x * (hi - lo) * (in - 1) / (out - 1);
        xori += lo * (in - 1);
        if (xori < 0 || xori > in - 1)
            return p->extrap;
    } else if (!strcmp(p->coord, "pytorch_half_pixel")) {
        xori = out == 1 ? -0.5 : (x + 0.5) / s - 0.5;
    } else if (!strcmp(p->coord, "half_pixel_symmetric")) {
        const double adj = (double)p->out[d] / out, center = in / 2;
        xori = center * (1 - adj) + (x + 0.5) / s - 0.5;
    } else if (!strcmp(p->coord, "tf_half_pixel_for_nn")) {
        xori = (x + 0.5) / s;
    } else {
        xori = (x + 0.5) / s - 0.5;
    }
    const double fl = floor(xori), ratio = xori == fl ? 1 : xori - fl;
    double c[4];
    int n;
    if (!strcmp(p->mode, "nearest")) {
        n = 2;
        if (xori == fl) {
            c[0] = 0;
            c[1] = 1;
        } else if (!strcmp(p->nearest, "round_prefer_floor")) {
            c[0] = ratio <= 0.5;
            c[1] = ratio > 0.5;
        } else if (!strcmp(p->nearest, "round_prefer_ceil")) {
            c[0] = ratio < 0.5;
            c[1] = ratio >= 0.5;
        } else if (!strcmp(p->nearest, "floor")) {
            c[0] = 1;
            c[1] = 0;
        } else {
            c[0] = 0;
            c[1] = 1;
        }
    } else if (!strcmp(p->mode, "linear")) {
        n = 2;
        c[0] = 1 - ratio;
        c[1] = ratio;
    } else {
        const double A = p->a, r = ratio;
        n = 4;
        c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
        c[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
    }
    const int64_t len = p->in[d], first = s_rz_first_neighbour(xori, n, len);
    if (p->exclude) {
        double sum = 0;
        for (int k = 0; k < n; k++) {
            if (first + k < 0 || first + k >= len)
                c[k] = 0;
            sum += c[k];
        }
        for (int k = 0; k < n; k++)
            c[k] /= sum;
    }
    double v = 0;
    for (int k = 0; k < n; k++) {
        const int64_t i = first + k < 0 ? 0 : first + k >= len ? len - 1 : first + k;
        v += c[k] * data[i];
    }
    return v;
}

/* _interpolate_nd_with_x: dims d.. of x (at offset off) at output index xo. */
static double s_rz_nd(const s_rz *p, const float *x, int d, int64_t off, const int64_t *xo)
{
    if (d == p->ndim)
        return x[off];
    int64_t stride = 1;
    for (int e = d + 1; e < p->ndim; e++)
        stride *= p->in[e];
    double vals[64];
    for (int64_t i = 0; i < p->in[d]; i++)
        vals[i] = s_rz_nd(p, x, d + 1, off + i * stride, xo);
    return s_rz_1d(p, d, vals, xo[d]);
}

static gx_view s_rz_ref(const s_rz *p, const gx_view *x)
{
    gx_view y = ot_rand(GX_F32, p->ndim, p->out);
    for (int64_t i = 0; i < y.numel; i++) {
        int64_t xo[4], rest = i;
        for (int d = p->ndim - 1; d >= 0; d--) {
            xo[d] = rest % p->out[d];
            rest /= p->out[d];
        }
        ((float *)y.data)[i] = (float)s_rz_nd(p, x->data, 0, 0, xo);
    }
    return y;
}

/* Every mode and coordinate transformation, by scales and by sizes,
 * against the reference. */
START_TEST(test_resize_reference)
{
    static const char *const coords[] = {"half_pixel",    "half_pixel_symmetric",
                                         "pytorch_half_pixel", "align_corners",
                                         "asymmetric",    "tf_half_pixel_for_nn",
                                         "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const float scales[][4] = {{1, 1, 2.5f, 0.6f}, {1, 2, 0.5f, 1.7f}, {1, 1, 1, 3}};
    static const int64_t sizes[][4] = {{1, 3, 7, 1}, {2, 2, 3, 13}, {1, 3, 5, 5}};
    float roi[8] = {0, 0.2f, 0.1f, -0.1f, 1, 0.9f, 0.7f, 1.2f};
    for (int m = 0; m < 3; m++) {
        for (size_t c = 0; c < sizeof coords / sizeof coords[0]; c++) {
            for (int nm = 0; nm < (m == 0 ? 4 : 1); nm++) {
                for (int ex = 0; ex < (m == 2 ? 2 : 1); ex++) {
                    for (int t = 0; t < 6; t++) {
                        /* fresh memory each round: ot_alloc holds a few hundred blocks */
                        ot_free_all();
                        gx_view x = RANDV(2, 3, 5, 6);
                        s_rz p = {.mode = modes[m], .coord = coords[c], .nearest = nearests[nm],
                                  .a = ex ? -0.5 : -0.75, .exclude = ex, .extrap = 0.5,
                                  .ndim = 4};
                        gx_view in[4] = {x, F32V(SHAPE(8), 0), NONE, NONE};
                        memcpy(in[1].data, roi, sizeof roi);
                        for (int d = 0; d < 4; d++) {
                            p.in[d] = x.shape[d];
                            p.roi[d] = roi[d];
                            p.roi[4 + d] = roi[4 + d];
                            if (t < 3) {
                                p.scale[d] = scales[t][d];
                                p.out[d] = (int64_t)(p.scale[d] * (double)p.in[d]);
                            } else {
                                p.out[d] = sizes[t - 3][d];
                                p.scale[d] = (double)p.out[d] / (double)p.in[d];
                            }
                        }
                        if (t < 3)
                            in[2] = ot_view(GX_F32, ot_copy(scales[t], 16), SHAPE(4));
                        else
                            in[3] = ot_view(GX_I64, ot_copy(sizes[t - 3], 32), SHAPE(4));
                        gx_view want = s_rz_ref(&p, &x);
                        ot_check_f32(GX_OP_RESIZE,
                                    NODE(A_STR("mode", modes[m]),
                                         A_STR("coordinate_transformation_mode", coords[c]),
                                         A_STR("nearest_mode", nearests[nm]),
                                         A_FLOAT("cubic_coeff_a", p.a),
                                         A_INT("exclude_outside", ex),
                                         A_FLOAT("extrapolation_value", 0.5)),
                                    4, in, &want, 1e-5f, 1e-5f);
                    }
                }
            }
        }
    }
}
END_TEST

/* A linear Resize of the last two dims equals ONNX Runtime's bit for bit
 * (its bilinear kernel's order of operations): these outputs are ONNX
 * Runtime 1.30's for this input, half_pixel by 2 x 2 and
 * pytorch_half_pixel by 1.7 x 2.3 (the separable walk other resizes take
 * is a few ulps away from them). */
START_TEST(test_resize_bilinear_as_ort)
{
    static const float x[12] = {
        -0x1.33f112p+1f, -0x1.fc8dcap+1f, -0x1.7d7bc4p-1f, 0x1.42e6e6p+0f, 0x1.b43decp+1f,
        0x1.5104a0p-2f, -0x1.a86ee2p+0f, -0x1.2d5b0cp+1f, 0x1.1f84b4p+1f, 0x1.39e0dcp+2f,
        0x1.a2f90cp-1f, -0x1.d99924p+1f,
    };
    static const float by2[48] = {
        -0x1.33f112p+1f, -0x1.661840p+1f, -0x1.ca669cp+1f, -0x1.954214p+1f, -0x1.8d5550p+0f,
        -0x1.f2a584p-3f, 0x1.84fb68p-1f, 0x1.42e6e6p+0f, -0x1.e7954cp-1f, -0x1.704916p+0f,
        -0x1.34a2fcp+1f, -0x1.354eecp+1f, -0x1.7450b4p+0f, -0x1.47ff60p-1f, 0x1.954ce0p-6f,
        0x1.6dfe98p-2f, 0x1.f46458p+0f, 0x1.4785c2p+0f, -0x1.2376f8p-4f, -0x1.d5a25cp-1f,
        -0x1.42477cp+0f, -0x1.6f55b0p+0f, -0x1.71fbccp+0f, -0x1.734ed8p+0f, 0x1.8f0f9cp+1f,
        0x1.5a6deep+1f, 0x1.e25518p+0f, 0x1.b0a092p-1f, -0x1.a4ca60p-2f, -0x1.73ac50p+0f,
        -0x1.238e70p+1f, -0x1.586a92p+1f, 0x1.44b302p+1f, 0x1.6bdc9cp+1f, 0x1.ba2fd4p+1f,
        0x1.6f6348p+1f, 0x1.16edf8p+0f, -0x1.62071cp-1f, -0x1.3c8700p+1f, -0x1.ae89a0p+1f,
        0x1.1f84b4p+1f, 0x1.7493f4p+1f, 0x1.0f593cp+2f, 0x1.f100dap+1f, 0x1.d6fe40p+0f,
        -0x1.3ebcb8p-2f, -0x1.49034cp+1f, -0x1.d99924p+1f,
    };
    static const float by17[45] = {
        -0x1.33f112p+1f, -0x1.52783ap+1f, -0x1.a9b13ap+1f, -0x1.f39256p+1f, -0x1.3fed46p+1f,
        -0x1.189062p+0f, -0x1.73fcc0p-4f, 0x1.9025fep-1f, 0x1.42e6e6p+0f, -0x1.766a50p-3f,
        -0x1.04c02cp-1f, -0x1.712810p+0f, -0x1.2690ccp+1f, -0x1.c3c810p+0f, -0x1.3a6e84p+0f,
        -0x1.8dbddap-1f, -0x1.6a4a8ap-2f, -0x1.f024b0p-4f, 0x1.9e5aa6p+1f, 0x1.633f06p+1f,
        0x1.74bba4p+0f, 0x1.4d40d8p-3f, -0x1.44e110p-1f, -0x1.6e8930p+0f, -0x1.d50ed6p+0f,
        -0x1.0cdc6ep+1f, -0x1.1fbe62p+1f, 0x1.6121b4p+1f, 0x1.639b1cp+1f, 0x1.6aacd4p+1f,
        0x1.689906p+1f, 0x1.7178a2p+0f, 0x1.1bf3a0p-4f, -0x1.329ba8p+0f, -0x1.36eb8cp+1f,
        -0x1.8d9bdcp+1f, 0x1.1f84b4p+1f, 0x1.534b34p+1f, 0x1.e73936p+1f, 0x1.343182p+2f,
        0x1.84fd5cp+1f, 0x1.432f54p+0f, -0x1.4f62b8p-1f, -0x1.4f4c9ep+1f, -0x1.d99924p+1f,
    };
    gx_view in[3] = {ot_view(GX_F32, ot_copy(x, sizeof x), SHAPE(1, 1, 3, 4)),
                     F32V(SHAPE(0)), F32V(SHAPE(4), 1, 1, 2, 2)};
    ot_check_f32(GX_OP_RESIZE, NODE(A_STR("mode", "linear")), 3, in,
                 &(gx_view){.dtype = GX_F32, .ndim = 4, .shape = {1, 1, 6, 8}, .numel = 48,
                            .data = (void *)by2},
                 0, 0);
    in[2] = F32V(SHAPE(4), 1, 1, 1.7f, 2.3f);
    ot_check_f32(GX_OP_RESIZE,
                 NODE(A_STR("mode", "linear"),
                      A_STR("coordinate_transformation_mode", "pytorch_half_pixel")),
                 3, in,
                 &(gx_view){.dtype = GX_F32, .ndim = 4, .shape = {1, 1, 5, 9}, .numel = 45,
                            .data = (void *)by17},
                 0, 0);
}
END_TEST

START_TEST(test_resize_hand)
{
    /* the operator documentation's examples */
    gx_view x22 = F32V(SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    gx_view in[4] = {x22, NONE, F32V(SHAPE(4), 1, 1, 2, 2), NONE};
    ot_expect(GX_OP_RESIZE, NODE(A_STR("mode", "linear")), 3, in,
              F32V(SHAPE(1, 1, 4, 4), 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25,
                   3.5, 3, 3.25, 3.75, 4),
              1e-6f, 0);
    ot_expect(GX_OP_RESIZE,
              NODE(A_STR("mode", "linear"), A_STR("coordinate_transformation_mode",
                                                  "align_corners")),
              3, in,
              F32V(SHAPE(1, 1, 4, 4), 1, 1.3333333f, 1.6666667f, 2, 1.6666666f, 2, 2.3333333f,
                   2.6666667f, 2.3333333f, 2.6666665f, 3, 3.3333335f, 3, 3.3333333f, 3.6666667f,
                   4),
              1e-6f, 0);
    in[2] = F32V(SHAPE(4), 1, 1, 2, 3);
    ot_expect(GX_OP_RESIZE, NULL, 3, in,
              F32V(SHAPE(1, 1, 4, 6), 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3,
                   3, 4, 4, 4),
              0, 0);
    gx_view x24 = F32V(SHAPE(1, 1, 2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    gx_view dn[3] = {x24, NONE, F32V(SHAPE(4), 1, 1, 0.6f, 0.6f)};
    ot_expect(GX_OP_RESIZE, NULL, 3, dn, F32V(SHAPE(1, 1, 1, 2), 1, 3), 0, 0);
    ot_expect(GX_OP_RESIZE, NODE(A_STR("mode", "linear")), 3, dn,
              F32V(SHAPE(1, 1, 1, 2), 2.6666665f, 4.3333331f), 1e-6f, 0);
    /* sizes, with an axes subset and keep_aspect_ratio_policy */
    gx_view sz[4] = {x22, NONE, NONE, I64V(SHAPE(2), 4, 3)};
    ot_expect(GX_OP_RESIZE, NODE(A_INTS("axes", 3, 2)), 4, sz,
              F32V(SHAPE(1, 1, 3, 4), 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4), 0, 0);
    /* not_larger: scale min(4/2, 3/2) = 1.5 -> [3, 3]; not_smaller: 2 -> [4, 4] */
    sz[3] = I64V(SHAPE(2), 3, 4);
    ot_expect(GX_OP_RESIZE,
              NODE(A_INTS("axes", 2, 3), A_STR("keep_aspect_ratio_policy", "not_larger")), 4, sz,
              F32V(SHAPE(1, 1, 3, 3), 1, 1, 2, 1, 1, 2, 3, 3, 4), 0, 0);
    gx_view big;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_RESIZE,
                            NODE(A_INTS("axes", 2, 3),
                                 A_STR("keep_aspect_ratio_policy", "not_smaller")),
                            4, sz, 1, av, &big, err),
                     GX_OK);
    ot_check_shape(&big, SHAPE(1, 1, 4, 4));
    /* tf_crop_and_resize with an extrapolation value (the node test) */
    gx_view x44 = s_iota(SHAPE(1, 1, 4, 4));
    for (int i = 0; i < 16; i++)
        ((float *)x44.data)[i] += 1;
    gx_view crop[4] = {x44, F32V(SHAPE(8), 0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f), NONE,
                       I64V(SHAPE(4), 1, 1, 3, 3)};
    ot_expect(GX_OP_RESIZE,
              NODE(A_STR("mode", "linear"),
                   A_STR("coordinate_transformation_mode", "tf_crop_and_resize"),
                   A_FLOAT("extrapolation_value", 10)),
              4, crop, F32V(SHAPE(1, 1, 3, 3), 7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10), 1e-6f, 0);
    /* opset 11 passes empty roi and scales next to sizes */
    gx_view e11[4] = {x22, ot_view(GX_F32, NULL, SHAPE(0)), ot_view(GX_F32, NULL, SHAPE(0)),
                      I64V(SHAPE(4), 1, 1, 1, 3)};
    ot_expect(GX_OP_RESIZE, NODE(A_STR("coordinate_transformation_mode", "tf_half_pixel_for_nn")),
              4, e11, F32V(SHAPE(1, 1, 1, 3), 3, 4, 4), 0, 0);
}
END_TEST

/* Nearest moves elements of any dtype; rank 1 and one long last dim. */
START_TEST(test_resize_nearest_dtypes)
{
    gx_view u8 = ot_rand(GX_U8, SHAPE(3, 5, 300));
    gx_view in[3] = {u8, NONE, F32V(SHAPE(3), 1, 1.5f, 1.9f)};
    gx_view out;
    ot_check_threads(GX_OP_RESIZE, NODE(A_STR("nearest_mode", "floor")), 3, in, 1, &out);
    /* 300 * 1.9f is 569.99999 in float64: 569 columns */
    ot_check_shape(&out, SHAPE(3, 7, 569));
    for (int64_t i = 0; i < out.numel; i++) {
        const int64_t w = i % 569, h = i / 569 % 7, n = i / (7 * 569);
        const int64_t sh = (int64_t)floor((h + 0.5) / 1.5 - 0.5),
                      sw = (int64_t)floor((w + 0.5) / (double)1.9f - 0.5);
        const int64_t src = n * 1500 + (sh < 0 ? 0 : sh) * 300 + (sw < 0 ? 0 : sw);
        ck_assert_int_eq(((uint8_t *)out.data)[i], ((uint8_t *)u8.data)[src]);
    }
    gx_view i64 = I64V(SHAPE(3), 7, 8, 9);
    gx_view r1[4] = {i64, NONE, NONE, I64V(SHAPE(1), 5)};
    ot_check_threads(GX_OP_RESIZE, NODE(A_STR("coordinate_transformation_mode", "asymmetric")), 4,
                    r1, 1, &out);
    static const int64_t want[] = {7, 8, 8, 9, 9};
    ck_assert(out.dtype == GX_I64 && memcmp(out.data, want, sizeof want) == 0);
}
END_TEST

/* Upsample (opset 7 attribute and opset 9 input) and the opset-10 Resize:
 * asymmetric coordinates, nearest takes the floor. */
START_TEST(test_upsample)
{
    gx_view x = F32V(SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    gx_view want = F32V(SHAPE(1, 1, 4, 6), 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4,
                        3, 3, 3, 4, 4, 4);
    gx_view in[2] = {x, F32V(SHAPE(4), 1, 1, 2, 3)};
    ot_check_f32(GX_OP_UPSAMPLE, NULL, 2, in, &want, 0, 0);
    ot_check_f32(GX_OP_UPSAMPLE, NODE(A_FLOATS("scales", 1, 1, 2, 3)), 1, in, &want, 0, 0);
    ot_check_f32(GX_OP_RESIZE, NULL, 2, in, &want, 0, 0);
    gx_view lin = F32V(SHAPE(1, 1, 2, 4), 1, 1.5, 2, 2, 3, 3.5, 4, 4);
    in[1] = F32V(SHAPE(4), 1, 1, 1, 2);
    ot_check_f32(GX_OP_UPSAMPLE, NODE(A_STR("mode", "linear")), 2, in, &lin, 0, 0);
    /* opset-10 Resize shrinking rounds up (as onnxruntime) */
    gx_view x24 = F32V(SHAPE(1, 1, 2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    gx_view dn[2] = {x24, F32V(SHAPE(4), 1, 1, 0.6f, 0.6f)}, dnw = F32V(SHAPE(1, 1, 1, 2), 1, 3);
    ot_check_f32(GX_OP_RESIZE, NULL, 2, dn, &dnw, 0, 0);
}
END_TEST

/* ---- Pad ---- */

/* numpy.pad of one dim after cropping the negative pads: the source index
 * of output index o, or -1 for the constant. */
static int64_t s_ref_pad_src(const char *mode, int64_t in, int64_t b, int64_t e, int64_t o)
{
    const int64_t s0 = b < 0 ? -b : 0, m = in - s0 - (e < 0 ? -e : 0);
    int64_t j = o - (b > 0 ? b : 0);
    if (j >= 0 && j < m)
        return s0 + j;
    if (!strcmp(mode, "constant"))
        return -1;
    if (!strcmp(mode, "edge"))
        return s0 + (j < 0 ? 0 : m - 1);
    if (!strcmp(mode, "wrap")) {
        while (j < 0)
            j += m;
        return s0 + j % m;
    }
    while (m > 1 && (j < 0 || j >= m)) /* reflect, again and again */
        j = j < 0 ? -j : 2 * (m - 1) - j;
    return s0 + (m > 1 ? j : 0);
}

START_TEST(test_pad_hand)
{
    gx_view x = F32V(SHAPE(3), 1, 2, 3);
    gx_view in[3] = {x, I64V(SHAPE(2), 2, 2), s_f32_scalar(9)};
    ot_expect(GX_OP_PAD, NULL, 3, in, F32V(SHAPE(7), 9, 9, 1, 2, 3, 9, 9), 0, 0);
    ot_expect(GX_OP_PAD, NULL, 2, in, F32V(SHAPE(7), 0, 0, 1, 2, 3, 0, 0), 0, 0);
    ot_expect(GX_OP_PAD, NODE(A_STR("mode", "reflect")), 2, in,
              F32V(SHAPE(7), 3, 2, 1, 2, 3, 2, 1), 0, 0);
    ot_expect(GX_OP_PAD, NODE(A_STR("mode", "edge")), 2, in, F32V(SHAPE(7), 1, 1, 1, 2, 3, 3, 3),
              0, 0);
    ot_expect(GX_OP_PAD, NODE(A_STR("mode", "wrap")), 2, in, F32V(SHAPE(7), 2, 3, 1, 2, 3, 1, 2),
              0, 0);
    /* negative pads crop, then the crop's edge pads */
    in[1] = I64V(SHAPE(2), -1, 2);
    ot_expect(GX_OP_PAD, NODE(A_STR("mode", "edge")), 2, in, F32V(SHAPE(4), 2, 3, 3, 3), 0, 0);
    /* opset 2: pads and value as attributes */
    gx_view m = F32V(SHAPE(2, 2), 1, 2, 3, 4);
    ot_expect(GX_OP_PAD, NODE(A_INTS("pads", 0, 1, 1, 0), A_FLOAT("value", 5)), 1, &m,
              F32V(SHAPE(3, 3), 5, 1, 2, 5, 3, 4, 5, 5, 5), 0, 0);
    /* opset 18: axes (int32, negative) */
    gx_view ax[4] = {m, I64V(SHAPE(2), 1, 2), NONE, I32V(SHAPE(1), -1)};
    ot_expect(GX_OP_PAD, NODE(A_STR("mode", "reflect")), 4, ax,
              F32V(SHAPE(2, 5), 2, 1, 2, 1, 2, 4, 3, 4, 3, 4), 0, 0);
    /* int32 edge pad, as the node tests do */
    gx_view i = I32V(SHAPE(2, 2), 1, 2, 3, 4);
    gx_view ii[2] = {i, I64V(SHAPE(4), 1, 0, 0, 1)};
    gx_view out;
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run(GX_OP_PAD, NODE(A_STR("mode", "edge")), 2, ii, 1, av, &out, err),
                     GX_OK);
    static const int32_t want[] = {1, 2, 2, 1, 2, 2, 3, 4, 4};
    ck_assert(out.dtype == GX_I32 && memcmp(out.data, want, sizeof want) == 0);
}
END_TEST

/* Every mode on every dtype size against numpy.pad's rules, pads past the
 * dim included. */
START_TEST(test_pad_reference)
{
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    static const gx_dtype dts[] = {GX_U8, GX_F16, GX_F32, GX_I64};
    static const int64_t padsets[][6] = {
        {1, 0, 2, 0, 3, 1}, {0, 0, 7, 0, 0, 9}, {-1, 2, 1, 1, -2, 0}, {2, 1, 0, 2, 0, -3}};
    for (int mi = 0; mi < 4; mi++) {
        for (int di = 0; di < 4; di++) {
            const size_t es = gx_dtype_size(dts[di]);
            for (int pi = 0; pi < 4; pi++) {
                ot_free_all(); /* ot_alloc holds a few hundred blocks */
                gx_view x = ot_rand(dts[di], SHAPE(3, 4, 37));
                const int64_t *p = padsets[pi];
                gx_view cv = s_scalar(dts[di], (const unsigned char[8]){7, 7, 7, 7, 7, 7, 7, 7});
                gx_view in[3] = {x, ot_view(GX_I64, ot_copy(p, 48), SHAPE(6)), cv};
                gx_view out;
                ot_check_threads(GX_OP_PAD, NODE(A_STR("mode", modes[mi])), 3, in, 1, &out);
                int64_t shape[3];
                for (int d = 0; d < 3; d++)
                    shape[d] = x.shape[d] + p[d] + p[3 + d];
                ot_check_shape(&out, 3, shape);
                for (int64_t i = 0; i < out.numel; i++) {
                    int64_t rest = i, src = 0, mul = 1;
                    for (int d = 2; d >= 0 && src >= 0; d--) {
                        const int64_t s =
                            s_ref_pad_src(modes[mi], x.shape[d], p[d], p[3 + d], rest % shape[d]);
                        rest /= shape[d];
                        src = s < 0 ? -1 : src + s * mul;
                        mul *= x.shape[d];
                    }
                    const void *w = src < 0 ? cv.data : (const char *)x.data + (size_t)src * es;
                    ck_assert_msg(memcmp((const char *)out.data + (size_t)i * es, w, es) == 0,
                                  "Pad %s %s pads %d: element %lld", modes[mi],
                                  gx_dtype_name(dts[di]), pi, (long long)i);
                }
            }
        }
    }
}
END_TEST

/* ---- DepthToSpace, SpaceToDepth ---- */

START_TEST(test_depthtospace)
{
    /* the operator documentation's examples */
    gx_view x = s_iota(SHAPE(1, 8, 2, 3));
    ot_expect(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 2)), 1, &x,
              F32V(SHAPE(1, 2, 4, 6), 0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4, 16,
                   5, 17, 27, 39, 28, 40, 29, 41, 6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9,
                   21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47),
              0, 0);
    ot_expect(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 2), A_STR("mode", "CRD")), 1, &x,
              F32V(SHAPE(1, 2, 4, 6), 0, 6, 1, 7, 2, 8, 12, 18, 13, 19, 14, 20, 3, 9, 4, 10, 5,
                   11, 15, 21, 16, 22, 17, 23, 24, 30, 25, 31, 26, 32, 36, 42, 37, 43, 38, 44, 27,
                   33, 28, 34, 29, 35, 39, 45, 40, 46, 41, 47),
              0, 0);
    /* against the definitions, and SpaceToDepth undoing DCR */
    gx_view r = ot_rand(GX_I16, SHAPE(2, 18, 5, 7));
    for (int crd = 0; crd < 2; crd++) {
        gx_view y;
        ot_check_threads(GX_OP_DEPTHTOSPACE,
                        NODE(A_INT("blocksize", 3), A_STR("mode", crd ? "CRD" : "DCR")), 1, &r, 1,
                        &y);
        ot_check_shape(&y, SHAPE(2, 2, 15, 21));
        for (int64_t i = 0; i < y.numel; i++) {
            const int64_t w = i % 21, h = i / 21 % 15, c = i / 315 % 2, n = i / 630;
            const int64_t bi = h % 3, bj = w % 3;
            const int64_t ch = crd ? c * 9 + bi * 3 + bj : (bi * 3 + bj) * 2 + c;
            ck_assert_int_eq(((int16_t *)y.data)[i],
                             ((int16_t *)r.data)[((n * 18 + ch) * 5 + h / 3) * 7 + w / 3]);
        }
        if (!crd) {
            gx_view back;
            ot_check_threads(GX_OP_SPACETODEPTH, NODE(A_INT("blocksize", 3)), 1, &y, 1, &back);
            ot_check_shape(&back, SHAPE(2, 18, 5, 7));
            ck_assert(memcmp(back.data, r.data, ot_nbytes(&r)) == 0);
        }
    }
    gx_view s = s_iota(SHAPE(1, 1, 2, 4));
    ot_expect(GX_OP_SPACETODEPTH, NODE(A_INT("blocksize", 2)), 1, &s,
              F32V(SHAPE(1, 4, 1, 2), 0, 2, 1, 3, 4, 6, 5, 7), 0, 0);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_errors)
{
    gx_view a23 = RANDV(2, 3), i64 = I64V(SHAPE(2), 1, 2), sc = s_f32_scalar(1);
    ot_expect_error(GX_OP_LOGSOFTMAX, NODE(A_INT("axis", 2)), 1, &a23, GX_EATTR,
                    "LogSoftmax: axis 2 is out of range for rank 2");
    ot_expect_error(GX_OP_HARDMAX, NULL, 1, &i64, GX_EDTYPE,
                    "Hardmax: int64 not supported (float32 only)");
    ot_expect_error(GX_OP_HARDMAX, NULL, 1, &sc, GX_ESHAPE,
                    "Hardmax: input is a scalar; rank >= 1 needed");
    /* BatchNormalization */
    gx_view x = RANDV(2, 3, 4);
    gx_view bn[5] = {x, RANDV(3), RANDV(3), RANDV(3), RANDV(4)};
    ot_expect_error(GX_OP_BATCHNORM, NULL, 5, bn, GX_ESHAPE,
                    "BatchNormalization: input_var has shape [4], expected [3]");
    bn[4] = RANDV(3);
    bn[0] = RANDV(3);
    ot_expect_error(GX_OP_BATCHNORM, NULL, 5, bn, GX_ESHAPE,
                    "BatchNormalization: X has rank 1; [N, C, ...] needed");
    bn[0] = x;
    ot_expect_error(GX_OP_BATCHNORM, NODE(A_INT("spatial", 0)), 5, bn, GX_EUNSUPPORTED,
                    "BatchNormalization: spatial=0 (statistics per element) is not supported");
    ot_expect_error(GX_OP_BATCHNORM, NODE(A_INT("training_mode", 2)), 5, bn, GX_EATTR,
                    "BatchNormalization: training_mode 2 is not 0 or 1");
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[3];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_BATCHNORM, NULL, 5, bn, 1, av, 3, out, err), GX_ESHAPE);
    ck_assert_str_eq(err, "BatchNormalization: running_mean and running_var are outputs of "
                          "training_mode=1 only");
    /* LayerNormalization */
    gx_view ln[3] = {x, RANDV(3, 4), RANDV(4)};
    ot_expect_error(GX_OP_LAYERNORM, NULL, 3, ln, GX_ESHAPE,
                    "LayerNormalization: Scale of shape [3,4] does not broadcast to the "
                    "normalised shape [4]");
    ot_expect_error(GX_OP_LAYERNORM, NODE(A_INT("axis", -4)), 3, ln, GX_EATTR,
                    "LayerNormalization: axis -4 is out of range for rank 3");
    ot_expect_error(GX_OP_LAYERNORM, NODE(A_INT("axis", 1), A_INT("stash_type", 10)), 3, ln,
                    GX_EUNSUPPORTED,
                    "LayerNormalization: stash_type 10 not supported (1 = float32 or 11 = "
                    "float64)");
    ln[2] = RANDV(2);
    ot_expect_error(GX_OP_LAYERNORM, NODE(A_INT("axis", 1)), 3, ln, GX_ESHAPE,
                    "LayerNormalization: B of shape [2] does not broadcast to the normalised "
                    "shape [3,4]");
    /* Attention */
    gx_view at[6] = {RANDV(1, 2, 3, 4), RANDV(1, 2, 5, 4), RANDV(1, 2, 5, 6), RANDV(3, 6)};
    ot_expect_error(GX_OP_ATTENTION, NULL, 4, at, GX_ESHAPE,
                    "Attention: attn_mask [3,6] does not fit [1,2,3,5] (rank 1 to 4, the last "
                    "dim at most the keys', the others 1 or equal)");
    at[3] = RANDV(3, 5);
    at[4] = RANDV(1, 2, 2, 4);
    ot_expect_error(GX_OP_ATTENTION, NULL, 5, at, GX_ESHAPE,
                    "Attention: past_key and past_value come together");
    at[5] = RANDV(1, 2, 3, 6);
    ot_expect_error(GX_OP_ATTENTION, NULL, 6, at, GX_ESHAPE,
                    "Attention: past_key [1,2,2,4] and past_value [1,2,3,6] are not [1, 2, past, "
                    "4] and [1, 2, past, 6]");
    at[1] = RANDV(1, 2, 5, 3);
    ot_expect_error(GX_OP_ATTENTION, NULL, 3, at, GX_ESHAPE,
                    "Attention: K [B, kv_heads, kv_seq, 4] and V [B, kv_heads, kv_seq, v_head] "
                    "do not fit Q's head size or each other");
    gx_view a3[3] = {RANDV(1, 3, 8), RANDV(1, 5, 8), RANDV(1, 5, 8)};
    ot_expect_error(GX_OP_ATTENTION, NULL, 3, a3, GX_EATTR,
                    "Attention: 3-D Q, K, V need q_num_heads and kv_num_heads");
    ot_expect_error(GX_OP_ATTENTION, NODE(A_INT("q_num_heads", 3), A_INT("kv_num_heads", 2)), 3,
                    a3, GX_ESHAPE,
                    "Attention: Q, K, V's last dims 8, 8, 8 do not split into 3 query and 2 "
                    "key/value heads of one size");
    gx_view gq[3] = {RANDV(1, 2, 3, 4), RANDV(1, 4, 5, 4), RANDV(1, 4, 5, 4)};
    ot_expect_error(GX_OP_ATTENTION, NULL, 3, gq, GX_ESHAPE,
                    "Attention: 2 query heads are not a multiple of 4 key/value heads");
    a3[1] = ot_rand(GX_I64, SHAPE(1, 5, 8));
    ot_expect_error(GX_OP_ATTENTION, NULL, 3, a3, GX_EDTYPE, NULL);
    /* InstanceNormalization, MVN, LRN */
    gx_view in3[3] = {x, RANDV(2), RANDV(3)};
    ot_expect_error(GX_OP_INSTANCENORM, NULL, 3, in3, GX_ESHAPE,
                    "InstanceNormalization: scale has shape [2], expected [3]");
    ot_expect_error(GX_OP_MVN, NULL, 1, &x, GX_EATTR,
                    "MeanVarianceNormalization: axis 3 is out of range for rank 3");
    ot_expect_error(GX_OP_MVN, NODE(A_INTS("axes", 1, -2)), 1, &x, GX_EATTR,
                    "MeanVarianceNormalization: axis -2 is given twice");
    ot_expect_error(GX_OP_LRN, NODE(A_INT("size", 0)), 1, &x, GX_EATTR,
                    "LRN: size 0 is not positive");
    ot_expect_error(GX_OP_LRN, NULL, 1, &x, GX_EATTR, "LRN: attribute 'size' is required");
    /* Dropout: a training ratio outside [0, 1) (check_ops_random.c runs
     * it in [0, 1)), bad dtypes */
    const bool t = true;
    gx_view dr[3] = {x, s_f32_scalar(1), s_scalar(GX_BOOL, &t)};
    ot_expect_error(GX_OP_DROPOUT, NULL, 3, dr, GX_EATTR, "Dropout: ratio 1 is outside [0, 1)");
    dr[1] = s_f32_scalar(-0.5f);
    ot_expect_error(GX_OP_DROPOUT, NULL, 3, dr, GX_EATTR, "Dropout: ratio -0.5 is outside [0, 1)");
    dr[1] = NONE;
    ot_expect_error(GX_OP_DROPOUT, NODE(A_FLOAT("ratio", 2)), 3, dr, GX_EATTR,
                    "Dropout: ratio 2 is outside [0, 1)");
    ot_expect_error(GX_OP_DROPOUT, NULL, 1, &i64, GX_EDTYPE,
                    "Dropout: data is int64, expected a float type");
    dr[2] = s_f32_scalar(1);
    ot_expect_error(GX_OP_DROPOUT, NULL, 3, dr, GX_ESHAPE,
                    "Dropout: training_mode must be a bool scalar");
}
END_TEST

START_TEST(test_errors_spatial)
{
    gx_view x = RANDV(1, 1, 2, 2);
    gx_view rz[4] = {x, NONE, F32V(SHAPE(4), 1, 1, 2, 2), I64V(SHAPE(4), 1, 1, 4, 4)};
    ot_expect_error(GX_OP_RESIZE, NULL, 4, rz, GX_ESHAPE,
                    "Resize: exactly one of scales and sizes must be given");
    rz[3] = NONE;
    ot_expect_error(GX_OP_RESIZE, NODE(A_INT("antialias", 1)), 4, rz, GX_EUNSUPPORTED,
                    "Resize: antialias=1 is not supported");
    ot_expect_error(GX_OP_RESIZE, NODE(A_STR("mode", "area")), 4, rz, GX_EATTR,
                    "Resize: mode 'area' is not one of nearest, linear, cubic");
    ot_expect_error(GX_OP_RESIZE, NODE(A_STR("nearest_mode", "up")), 4, rz, GX_EATTR,
                    "Resize: nearest_mode 'up' is not one of round_prefer_floor, "
                    "round_prefer_ceil, floor, ceil");
    ot_expect_error(GX_OP_RESIZE,
                    NODE(A_STR("coordinate_transformation_mode", "tf_crop_and_resize")), 4, rz,
                    GX_ESHAPE, "Resize: tf_crop_and_resize needs roi");
    ot_expect_error(GX_OP_RESIZE, NODE(A_INTS("axes", 2, 2)), 4, rz, GX_EATTR,
                    "Resize: axis 2 is given twice");
    ot_expect_error(GX_OP_RESIZE, NODE(A_INTS("axes", 2, 3)), 4, rz, GX_ESHAPE,
                    "Resize: scales has shape [4], expected [2]");
    rz[2] = F32V(SHAPE(4), 1, 1, 0, 2);
    ot_expect_error(GX_OP_RESIZE, NULL, 4, rz, GX_ESHAPE,
                    "Resize: scale 0 for dim 2 is not usable");
    rz[2] = NONE;
    rz[3] = I64V(SHAPE(4), 1, 1, 0, 2);
    ot_expect_error(GX_OP_RESIZE, NULL, 4, rz, GX_ESHAPE,
                    "Resize: cannot resize dim 2 from 2 to 0");
    rz[3] = I64V(SHAPE(4), 1, 1, 3, 2);
    ot_expect_error(GX_OP_RESIZE, NODE(A_STR("keep_aspect_ratio_policy", "fit")), 4, rz, GX_EATTR,
                    "Resize: keep_aspect_ratio_policy 'fit' is not one of stretch, not_larger, "
                    "not_smaller");
    rz[0] = I64V(SHAPE(1, 1, 1, 1), 3);
    ot_expect_error(GX_OP_RESIZE, NODE(A_STR("mode", "linear")), 4, rz, GX_EDTYPE,
                    "Resize: linear mode on int64 not supported (float32 only)");
    gx_view up[2] = {x, F32V(SHAPE(3), 1, 2, 2)};
    ot_expect_error(GX_OP_UPSAMPLE, NULL, 2, up, GX_ESHAPE,
                    "Upsample: scales has shape [3], expected [4]");
    ot_expect_error(GX_OP_UPSAMPLE, NULL, 1, up, GX_ESHAPE, "Upsample: scales are missing");
    ot_expect_error(GX_OP_UPSAMPLE, NODE(A_STR("mode", "cubic")), 2, up, GX_EATTR,
                    "Upsample: mode 'cubic' is not one of nearest, linear");
    /* Pad */
    gx_view pd[3] = {x, I64V(SHAPE(4), 0, 0, 1, 1), NONE};
    ot_expect_error(GX_OP_PAD, NULL, 2, pd, GX_ESHAPE, "Pad: pads has shape [4], expected [8]");
    pd[1] = I64V(SHAPE(8), 0, 0, 0, -3, 0, 0, 0, 0);
    ot_expect_error(GX_OP_PAD, NULL, 2, pd, GX_ESHAPE,
                    "Pad: pads -3, 0 do not fit dim 3 of size 2");
    pd[1] = I64V(SHAPE(8), 0, 0, 0, -2, 0, 0, 0, 1);
    ot_expect_error(GX_OP_PAD, NODE(A_STR("mode", "edge")), 2, pd, GX_ESHAPE,
                    "Pad: edge mode cannot pad dim 3, which is empty");
    ot_expect_error(GX_OP_PAD, NODE(A_STR("mode", "mirror")), 2, pd, GX_EATTR,
                    "Pad: mode 'mirror' is not one of constant, reflect, edge, wrap");
    pd[2] = I64V(SHAPE(1), 0);
    ot_expect_error(GX_OP_PAD, NULL, 3, pd, GX_EDTYPE,
                    "Pad: constant_value is int64 but data is float32");
    ot_expect_error(GX_OP_PAD, NODE(A_INTS("pads", 0, 0, 0, 0, 0, 0, 0, 0)), 2, pd, GX_EATTR,
                    "Pad: pads and value are inputs since opset 11, not attributes");
    ot_expect_error(GX_OP_PAD, NULL, 1, pd, GX_ESHAPE, "Pad: pads are missing");
    /* DepthToSpace, SpaceToDepth */
    gx_view d = RANDV(1, 8, 2, 3);
    ot_expect_error(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 3)), 1, &d, GX_ESHAPE,
                    "DepthToSpace: 8 channels are not a multiple of 9");
    ot_expect_error(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 2), A_STR("mode", "RDC")), 1, &d,
                    GX_EATTR, "DepthToSpace: mode 'RDC' is not one of DCR, CRD");
    ot_expect_error(GX_OP_SPACETODEPTH, NODE(A_INT("blocksize", 2)), 1, &d, GX_ESHAPE,
                    "SpaceToDepth: height 2 and width 3 are not multiples of 2");
    ot_expect_error(GX_OP_SPACETODEPTH, NODE(A_INT("blocksize", 0)), 1, &d, GX_EATTR,
                    "SpaceToDepth: blocksize 0 is out of range");
    gx_view r3 = RANDV(8, 2, 3);
    ot_expect_error(GX_OP_DEPTHTOSPACE, NODE(A_INT("blocksize", 2)), 1, &r3, GX_ESHAPE,
                    "DepthToSpace: input has rank 3; [N, C, H, W] needed");
}
END_TEST

/* Values that fix a shape and are not known yet leave infer to run time. */
START_TEST(test_dynamic)
{
    gx_view x = RANDV(1, 1, 2, 2);
    gx_view rz[4] = {x, NONE, ot_view(GX_F32, NULL, SHAPE(4)), NONE};
    gx_view out;
    char err[ERRLEN] = "";
    gx_attrval av[GX_MAX_ATTRS];
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_RESIZE, NULL, av, err, sizeof err), GX_OK);
    gx_infer ic = {.attr = av, .n_in = 4, .in = rz, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    ck_assert_int_eq(gx_op_schema_get(GX_OP_RESIZE)->infer(&ic), GX_INFER_DYNAMIC);
    gx_view pd[2] = {x, ot_view(GX_I64, NULL, SHAPE(8))};
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_PAD, NULL, av, err, sizeof err), GX_OK);
    ic.n_in = 2;
    ic.in = pd;
    ck_assert_int_eq(gx_op_schema_get(GX_OP_PAD)->infer(&ic), GX_INFER_DYNAMIC);
    gx_view dr[3] = {x, NONE, ot_view(GX_BOOL, NULL, 0, NULL)};
    ck_assert_int_eq(gx_op_resolve_attrs(GX_OP_DROPOUT, NULL, av, err, sizeof err), GX_OK);
    ic.n_in = 3;
    ic.in = dr;
    ck_assert_int_eq(gx_op_schema_get(GX_OP_DROPOUT)->infer(&ic), GX_INFER_DYNAMIC);
    ck_assert(gx_op_schema_get(GX_OP_RESIZE)->value_inputs == (1u << 1 | 1u << 2 | 1u << 3));
    ck_assert(gx_op_schema_get(GX_OP_PAD)->value_inputs == (1u << 1 | 1u << 3));
}
END_TEST

Suite *ops_nn_suite(void)
{
    Suite *s = suite_create("ops_nn");
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_softmax_family);
    tcase_add_test(tc, test_batchnorm);
    tcase_add_test(tc, test_batchnorm_training);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_rmsnorm);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_instancenorm);
    tcase_add_test(tc, test_mvn);
    tcase_add_test(tc, test_lrn);
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_resize_reference);
    tcase_add_test(tc, test_resize_hand);
    tcase_add_test(tc, test_resize_bilinear_as_ort);
    tcase_add_test(tc, test_resize_nearest_dtypes);
    tcase_add_test(tc, test_upsample);
    tcase_add_test(tc, test_pad_hand);
    tcase_add_test(tc, test_pad_reference);
    tcase_add_test(tc, test_depthtospace);
    suite_add_tcase(s, tc);
    tc = tcase_create("schema");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_errors_spatial);
    tcase_add_test(tc, test_dynamic);
    suite_add_tcase(s, tc);
    return s;
}
