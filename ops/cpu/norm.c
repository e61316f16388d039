/*
 * The normalisations on the CPU, float32: BatchNormalization (inference:
 * one multiply-add per element with per-channel factors; training: batch
 * statistics per channel), InstanceNormalization, LayerNormalization,
 * RMSNormalization, LpNormalization, GroupNormalization,
 * MeanVarianceNormalization and LRN.
 *
 * The statistics ops see the tensor as groups (one per index of the kept
 * dims) of elements spread over the reduced dims; a thread's share is a
 * range of groups. Means and variances take two passes (mean, then the
 * squared deviations from it), summed in float lanes per block and in
 * double across blocks, so the sums vectorise and stay accurate on long
 * rows.
 */
#include <float.h>
#include <math.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/rowsum.h"
#include "ops/cpu/vmath.h"

/* ---- groups ---- */

/* The elements of x split by the kept dims (kshape, one group per index)
 * and walked over the reduced dims (rshape); strides are x's. */
typedef struct s_groups {
    int kn, rn;
    int64_t kshape[GX_MAX_DIMS], kstride[GX_MAX_DIMS];
    int64_t rshape[GX_MAX_DIMS], rstride[GX_MAX_DIMS];
    int64_t ngroups, count; /* groups, elements per group */
} s_groups;

static void s_groups_init(s_groups *g, const gx_view *x, const bool *reduced)
{
    *g = (s_groups){.ngroups = 1, .count = 1};
    int64_t stride = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (reduced[d]) {
            g->rshape[g->rn] = x->shape[d];
            g->rstride[g->rn++] = stride;
            g->count *= x->shape[d];
        } else {
            g->kshape[g->kn] = x->shape[d];
            g->kstride[g->kn++] = stride;
            g->ngroups *= x->shape[d];
        }
        stride *= x->shape[d];
    }
    /* collected innermost first; the iterator wants outermost first */
    for (int i = 0; i < g->rn / 2; i++) {
        int j = g->rn - 1 - i;
        int64_t t = g->rshape[i];
        g->rshape[i] = g->rshape[j];
        g->rshape[j] = t;
        t = g->rstride[i];
        g->rstride[i] = g->rstride[j];
        g->rstride[j] = t;
    }
}

/* Offset in x of the first element of group gi (kept dims innermost
 * first, as collected). */
static int64_t s_group_base(const s_groups *g, int64_t gi)
{
    int64_t off = 0;
    for (int i = 0; i < g->kn; i++) {
        off += gi % g->kshape[i] * g->kstride[i];
        gi /= g->kshape[i];
    }
    return off;
}

static void s_group_iter(const s_groups *g, gx_nditer *it)
{
    gx_nditer_init(it, g->rn, g->rshape, 1, (const int64_t *const[]){g->rstride});
    gx_nditer_seek(it, 0, g->count);
}

/* Mean and population variance of the group starting at x (count > 0). */
static void s_group_stats(const s_groups *g, const float *x, double *mean, double *var)
{
    gx_nditer it;
    gx_nditer_run r;
    double sum = 0;
    s_group_iter(g, &it);
    const int64_t step = it.step[0];
    while (gx_nditer_next(&it, &r)) {
        if (step == 1) {
            sum += gx_row_sum(r.n, x + r.off[0]);
        } else {
            for (int64_t i = 0; i < r.n; i++)
                sum += x[r.off[0] + i * step];
        }
    }
    *mean = sum / (double)g->count;
    const float m = (float)*mean;
    double sq = 0;
    s_group_iter(g, &it);
    while (gx_nditer_next(&it, &r)) {
        if (step == 1) {
            sq += gx_row_sumsq(r.n, x + r.off[0], m);
        } else {
            for (int64_t i = 0; i < r.n; i++) {
                const double d = x[r.off[0] + i * step] - *mean;
                sq += d * d;
            }
        }
    }
    *var = sq / (double)g->count;
}

/* y = (x - mean) * a + b over the group starting at x (and y). */
static void s_group_affine(const s_groups *g, float *y, const float *x, float mean, float a,
                           float b)
{
    gx_nditer it;
    gx_nditer_run r;
    s_group_iter(g, &it);
    const int64_t step = it.step[0];
    while (gx_nditer_next(&it, &r)) {
        float *restrict yr = y + r.off[0];
        const float *restrict xr = x + r.off[0];
        if (step == 1) {
            for (int64_t i = 0; i < r.n; i++)
                yr[i] = (xr[i] - mean) * a + b;
        } else {
            for (int64_t i = 0; i < r.n; i++)
                yr[i * step] = (xr[i * step] - mean) * a + b;
        }
    }
}

/* ---- BatchNormalization ---- */

/* Inference: y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + B[c],
 * shared out as element ranges cut at [N, C] row ends. */
static void s_batchnorm_infer(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const float *scale = k->in[1].data, *bias = k->in[2].data, *mean = k->in[3].data,
                *var = k->in[4].data;
    const double eps = k->attr[GX_BATCHNORM_EPSILON].f;
    const int64_t C = x->shape[1];
    const int64_t S = gx_shape_numel(x->ndim - 2, x->shape + 2, INT64_MAX);
    const float *px = x->data;
    float *py = k->out[0].data;
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t row = u / S, end = (row + 1) * S < hi ? (row + 1) * S : hi;
        const int64_t c = row % C;
        const float a = (float)(scale[c] / sqrt(var[c] + eps)), m = mean[c], b = bias[c];
        float *restrict yr = py + u;
        const float *restrict xr = px + u;
        for (int64_t i = 0; i < end - u; i++)
            yr[i] = (xr[i] - m) * a + b;
        u = end;
    }
}

/* Training: statistics of each channel over N and the spatial dims; the
 * running mean and variance blend the inputs' with them by momentum. A
 * share is a range of channels. */
static void s_batchnorm_train(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const float *scale = k->in[1].data, *bias = k->in[2].data, *rmean = k->in[3].data,
                *rvar = k->in[4].data;
    const double eps = k->attr[GX_BATCHNORM_EPSILON].f, mom = k->attr[GX_BATCHNORM_MOMENTUM].f;
    bool reduced[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        reduced[d] = d != 1;
    s_groups g;
    s_groups_init(&g, x, reduced);
    int64_t lo, hi;
    gx_cpu_share(k, g.ngroups, 1, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) {
        double mean = 0, var = 0;
        const int64_t base = s_group_base(&g, c);
        if (g.count > 0) {
            s_group_stats(&g, (const float *)x->data + base, &mean, &var);
            s_group_affine(&g, (float *)k->out[0].data + base, (const float *)x->data + base,
                           (float)mean, (float)(scale[c] / sqrt(var + eps)), bias[c]);
        }
        if (k->n_out > 1)
            ((float *)k->out[1].data)[c] = (float)(rmean[c] * mom + mean * (1 - mom));
        if (k->n_out > 2)
            ((float *)k->out[2].data)[c] = (float)(rvar[c] * mom + var * (1 - mom));
    }
}

void gx_cpu_BATCHNORM(const gx_kargs *k)
{
    if (k->attr[GX_BATCHNORM_TRAINING_MODE].i)
        s_batchnorm_train(k);
    else
        s_batchnorm_infer(k);
}

/* ---- InstanceNormalization, MeanVarianceNormalization ---- */

/* Statistics per group of the dims not in reduced; y = (x - mean) * a + b
 * with a = scale[c] / sqrt(var + eps) and b = B[c] (c the group's channel)
 * for InstanceNormalization, a = 1 / (sqrt(var) + 1e-9) and b = 0 for
 * MeanVarianceNormalization (the epsilon of its ONNX function body). */
static void s_normalise_groups(const gx_kargs *k, const bool *reduced, bool instance)
{
    const gx_view *x = &k->in[0];
    s_groups g;
    s_groups_init(&g, x, reduced);
    if (g.count == 0)
        return;
    int64_t lo, hi;
    gx_cpu_share(k, g.ngroups, 1, &lo, &hi);
    for (int64_t gi = lo; gi < hi; gi++) {
        const int64_t base = s_group_base(&g, gi);
        const float *px = (const float *)x->data + base;
        double mean, var;
        s_group_stats(&g, px, &mean, &var);
        float a, b = 0;
        if (instance) {
            /* groups are [N, C] rows: gi counts C fastest */
            const int64_t c = gi % x->shape[1];
            const float *scale = k->in[1].data, *bias = k->in[2].data;
            a = (float)(scale[c] / sqrt(var + k->attr[GX_INSTANCENORM_EPSILON].f));
            b = bias[c];
        } else {
            a = (float)(1.0 / (sqrt(var) + 1e-9));
        }
        s_group_affine(&g, (float *)k->out[0].data + base, px, (float)mean, a, b);
    }
}

void gx_cpu_INSTANCENORM(const gx_kargs *k)
{
    bool reduced[GX_MAX_DIMS];
    for (int d = 0; d < k->in[0].ndim; d++)
        reduced[d] = d >= 2;
    s_normalise_groups(k, reduced, true);
}

void gx_cpu_MVN(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const gx_attrval *a = &k->attr[GX_MVN_AXES];
    static const int64_t def_axes[] = {0, 2, 3};
    const int64_t *axes = a->set ? a->ints : def_axes;
    const size_t n = a->set ? a->n : 3;
    bool reduced[GX_MAX_DIMS] = {false};
    for (size_t i = 0; i < n; i++) {
        int d = 0;
        gx_axis_norm(axes[i], x->ndim, &d);
        reduced[d] = true;
    }
    s_normalise_groups(k, reduced, false);
}

/* ---- LayerNormalization ---- */

/* One row of the normalised shape: y = (x - mean) * inv * scale + bias,
 * scale and bias broadcast to the row by the iterator (step 0 or 1 when
 * they are whole rows or scalars; any steps when they repeat inside). */
GX_CPU_CLONES static void s_layernorm_row(gx_nditer *it, float *restrict y,
                                          const float *restrict x, const float *scale,
                                          const float *bias, float mean, float inv)
{
    gx_nditer_run r;
    const int64_t ss = it->step[0], bs = it->step[1];
    while (gx_nditer_next(it, &r)) {
        float *restrict yr = y + r.y;
        const float *restrict xr = x + r.y;
        const float *sr = scale + r.off[0], *br = bias + r.off[1];
        if (ss == 1 && bs == 1) {
            for (int64_t i = 0; i < r.n; i++)
                yr[i] = (xr[i] - mean) * inv * sr[i] + br[i];
        } else {
            for (int64_t i = 0; i < r.n; i++)
                yr[i] = (xr[i] - mean) * inv * sr[i * ss] + br[i * bs];
        }
    }
}

/* The mean of a row of n > 0 floats and 1 / sqrt(variance + eps), the
 * sums vectorised for each ISA. */
GX_CPU_CLONES static void s_moments(int64_t n, const float *restrict x, double eps, double *mean,
                                    double *inv)
{
    *mean = gx_row_sum(n, x) / (double)n;
    *inv = 1.0 / sqrt(gx_row_sumsq(n, x, (float)*mean) / (double)n + eps);
}

/* Rows are the indices of the dims before axis; a share is a range of
 * rows. Mean and InvStdDev (float32, or float64 for stash_type 11) are
 * one value per row. */
void gx_cpu_LAYERNORM(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    int axis = x->ndim - 1;
    gx_axis_norm(k->attr[GX_LAYERNORM_AXIS].i, x->ndim, &axis);
    const int nn = x->ndim - axis;
    const int64_t rows = gx_shape_numel(axis, x->shape, INT64_MAX);
    const int64_t n = gx_shape_numel(nn, x->shape + axis, INT64_MAX);
    const double eps = k->attr[GX_LAYERNORM_EPSILON].f;
    const bool f64 = k->attr[GX_LAYERNORM_STASH_TYPE].i == 11;
    static const float zero = 0.0f;
    const bool has_bias = k->n_in > 2 && k->in[2].ndim >= 0;
    const float *scale = k->in[1].data, *bias = has_bias ? k->in[2].data : &zero;
    int64_t ss[GX_MAX_DIMS], bs[GX_MAX_DIMS] = {0};
    gx_bcast_strides(nn, k->in[1].ndim, k->in[1].shape, ss);
    if (has_bias)
        gx_bcast_strides(nn, k->in[2].ndim, k->in[2].shape, bs);
    gx_nditer it;
    gx_nditer_init(&it, nn, x->shape + axis, 2, (const int64_t *const[]){ss, bs});
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const float *px = (const float *)x->data + row * n;
        double mean = 0, inv = 0;
        if (n > 0) {
            s_moments(n, px, eps, &mean, &inv);
            gx_nditer_seek(&it, 0, n);
            s_layernorm_row(&it, (float *)k->out[0].data + row * n, px, scale, bias,
                            (float)mean, (float)inv);
        }
        for (int o = 1; o < k->n_out; o++) {
            const double v = o == 1 ? mean : inv;
            if (f64)
                ((double *)k->out[o].data)[row] = v;
            else
                ((float *)k->out[o].data)[row] = (float)v;
        }
    }
}

/* ---- RMSNormalization ---- */

/* 1 / sqrt(mean of squares + eps) of a row of n > 0 floats, the sum
 * vectorised for each ISA. */
GX_CPU_CLONES static double s_rms_inv(int64_t n, const float *restrict x, double eps)
{
    return 1.0 / sqrt(gx_row_sumsq(n, x, 0.0f) / (double)n + eps);
}

/* LayerNormalization's rows with a mean of 0 and no bias: y = x * inv *
 * scale (x - 0 and + 0 change no bits but a -0's sign). */
void gx_cpu_RMSNORM(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    int axis = x->ndim - 1;
    gx_axis_norm(k->attr[GX_RMSNORM_AXIS].i, x->ndim, &axis);
    const int nn = x->ndim - axis;
    const int64_t rows = gx_shape_numel(axis, x->shape, INT64_MAX);
    const int64_t n = gx_shape_numel(nn, x->shape + axis, INT64_MAX);
    const double eps = k->attr[GX_RMSNORM_EPSILON].f;
    static const float zero = 0.0f;
    int64_t ss[GX_MAX_DIMS], bs[GX_MAX_DIMS] = {0};
    gx_bcast_strides(nn, k->in[1].ndim, k->in[1].shape, ss);
    gx_nditer it;
    gx_nditer_init(&it, nn, x->shape + axis, 2, (const int64_t *const[]){ss, bs});
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t row = lo; row < hi && n > 0; row++) {
        const float *px = (const float *)x->data + row * n;
        gx_nditer_seek(&it, 0, n);
        s_layernorm_row(&it, (float *)k->out[0].data + row * n, px, k->in[1].data, &zero, 0.0f,
                        (float)s_rms_inv(n, px, eps));
    }
}

/* ---- LpNormalization ---- */

/* Columns of a [outer, n, inner] view normalised together when inner > 1:
 * a block's sums are lanes of one vector loop. */
#define S_LP_COLS 16

/* Sum of |x| (p 1) or x^2 (p 2) over x[0..n), in float lanes per block
 * and double across blocks (gx_row_sum's scheme). */
GX_CPU_CLONES static double s_lp_sum(int64_t n, const float *restrict x, bool l1)
{
    if (!l1)
        return gx_row_sumsq(n, x, 0.0f);
    double total = 0;
    for (int64_t b = 0; b < n; b += GX_ROWSUM_BLOCK) {
        const int64_t m = n - b < GX_ROWSUM_BLOCK ? n - b : GX_ROWSUM_BLOCK;
        const float *xb = x + b;
        float acc[GX_ROWSUM_LANES] = {0};
        int64_t i = 0;
        for (; i + GX_ROWSUM_LANES <= m; i += GX_ROWSUM_LANES)
            for (int j = 0; j < GX_ROWSUM_LANES; j++)
                acc[j] += fabsf(xb[i + j]);
        for (; i < m; i++)
            acc[0] += fabsf(xb[i]);
        for (int j = 0; j < GX_ROWSUM_LANES; j++)
            total += acc[j];
    }
    return total;
}

/* y = x / norm over n elements at stride 1. */
GX_CPU_CLONES static void s_lp_div(int64_t n, float *restrict y, const float *restrict x,
                                   float norm)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] / norm;
}

/* x as [outer, n, inner] around the axis. inner == 1: a share is a range
 * of rows; else a range of (outer, block of S_LP_COLS columns) pairs,
 * whose norms are summed in double lanes down the n rows. */
void gx_cpu_LPNORM(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    int axis = x->ndim - 1;
    gx_axis_norm(k->attr[GX_LPNORM_AXIS].i, x->ndim, &axis);
    const bool l1 = k->attr[GX_LPNORM_P].i == 1;
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t outer = gx_shape_numel(axis, x->shape, INT64_MAX);
    const float *px = x->data;
    float *py = k->out[0].data;
    int64_t lo, hi;
    if (inner == 1) {
        gx_cpu_share(k, outer, 1, &lo, &hi);
        for (int64_t r = lo; r < hi; r++) {
            const double s = s_lp_sum(n, px + r * n, l1);
            s_lp_div(n, py + r * n, px + r * n, (float)(l1 ? s : sqrt(s)));
        }
        return;
    }
    const int64_t blocks = (inner + S_LP_COLS - 1) / S_LP_COLS;
    gx_cpu_share(k, outer * blocks, 1, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const int64_t o = t / blocks, c0 = t % blocks * S_LP_COLS;
        const int64_t w = inner - c0 < S_LP_COLS ? inner - c0 : S_LP_COLS;
        const float *xb = px + o * n * inner + c0;
        float *yb = py + o * n * inner + c0;
        double acc[S_LP_COLS] = {0};
        float norm[S_LP_COLS];
        for (int64_t j = 0; j < n; j++) {
            const float *xr = xb + j * inner;
            for (int64_t c = 0; c < w; c++)
                acc[c] += l1 ? fabs((double)xr[c]) : (double)xr[c] * xr[c];
        }
        for (int64_t c = 0; c < w; c++)
            norm[c] = (float)(l1 ? acc[c] : sqrt(acc[c]));
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < w; c++)
                yb[j * inner + c] = xb[j * inner + c] / norm[c];
    }
}

/* ---- GroupNormalization ---- */

/* X [N, C, D...] as N * num_groups contiguous groups of C / num_groups
 * channels; a share is a range of groups. y = (x - mean) * inv * scale +
 * bias, scale and bias per channel (opset 21) or per group (opset 18, when
 * they hold num_groups values). */
void gx_cpu_GROUPNORM(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const int64_t c = x->shape[1], g = k->attr[GX_GROUPNORM_NUM_GROUPS].i, cg = c / g;
    const int64_t spatial = gx_shape_numel(x->ndim - 2, x->shape + 2, INT64_MAX);
    const int64_t count = cg * spatial, groups = x->shape[0] * g;
    const double eps = k->attr[GX_GROUPNORM_EPSILON].f;
    const bool per_group = k->in[1].shape[0] != c;
    const float *scale = k->in[1].data, *bias = k->in[2].data;
    int64_t lo, hi;
    gx_cpu_share(k, groups, 1, &lo, &hi);
    for (int64_t gi = lo; gi < hi && count > 0; gi++) {
        const float *px = (const float *)x->data + gi * count;
        float *py = (float *)k->out[0].data + gi * count;
        double mean, inv;
        s_moments(count, px, eps, &mean, &inv);
        for (int64_t j = 0; j < cg; j++) {
            const int64_t ch = gi % g * cg + j, p = per_group ? gi % g : ch;
            const float m = (float)mean, a = (float)inv, s = scale[p], b = bias[p];
            float *restrict yr = py + j * spatial;
            const float *restrict xr = px + j * spatial;
            for (int64_t i = 0; i < spatial; i++)
                yr[i] = (xr[i] - m) * a * s + b;
        }
    }
}

/* ---- LRN ---- */

/* y = x / (bias + alpha / size * sum of x^2 over the channels c - (size-1)/2
 * .. c + ceil((size-1)/2))^beta, along each [N, C] row of spatial elements;
 * shared out as element ranges cut at row ends. y holds the bases first;
 * the power is exp(-beta ln base), vectorised, when every base of the run
 * is a positive normal float (else libm's powf, which knows the special
 * cases). */
void gx_cpu_LRN(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const int64_t size = k->attr[GX_LRN_SIZE].i;
    const float alpha = (float)(k->attr[GX_LRN_ALPHA].f / (double)size);
    const float beta = (float)k->attr[GX_LRN_BETA].f, bias = (float)k->attr[GX_LRN_BIAS].f;
    const int64_t C = x->shape[1];
    const int64_t S = gx_shape_numel(x->ndim - 2, x->shape + 2, INT64_MAX);
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    const float *px = x->data;
    float *py = k->out[0].data;
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t row = u / S, end = (row + 1) * S < hi ? (row + 1) * S : hi;
        const int64_t c = row % C, w = end - u;
        const int64_t c0 = c - before < 0 ? 0 : c - before;
        const int64_t c1 = c + after >= C ? C - 1 : c + after;
        float *restrict yr = py + u;
        for (int64_t i = 0; i < w; i++)
            yr[i] = 0.0f;
        for (int64_t cc = c0; cc <= c1; cc++) {
            const float *restrict xr = px + u + (cc - c) * S;
            for (int64_t i = 0; i < w; i++)
                yr[i] += xr[i] * xr[i];
        }
        int odd = 0;
        for (int64_t i = 0; i < w; i++) {
            yr[i] = bias + alpha * yr[i];
            odd |= (yr[i] >= FLT_MIN) + (yr[i] <= FLT_MAX) != 2; /* NaN fails both */
        }
        const float *restrict xr = px + u;
        if (odd) {
            for (int64_t i = 0; i < w; i++)
                yr[i] = xr[i] / powf(yr[i], beta);
        } else {
            for (int64_t i = 0; i < w; i++)
                yr[i] = xr[i] * gx_v_expf(-beta * gx_v_logf(yr[i]));
        }
        u = end;
    }
}
