/*
 * Softmax, LogSoftmax and Hardmax on the CPU (opset 13: along one axis).
 * Softmax and LogSoftmax are numerically stable: the maximum along the axis
 * is subtracted before exp. The tensor is viewed as [outer, n, inner] with
 * n the axis; a thread's share is a range of outer rows when inner == 1,
 * else a range of the outer * inner columns.
 */
#include <math.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/rowsum.h"
#include "ops/cpu/vmath.h"

/* Columns handled together in the strided case: two stack rows of floats. */
#define S_COLS 256

/* One contiguous row of n > 0 elements. */
GX_CPU_CLONES static void s_softmax_row(int64_t n, float *restrict y, const float *restrict x)
{
    const float mx = gx_row_max(n, x);
    for (int64_t i = 0; i < n; i++)
        y[i] = gx_v_expf(x[i] - mx);
    const double sum = gx_row_sum(n, y);
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++)
        y[i] *= inv;
}

/* w <= S_COLS neighbouring columns of n > 0 elements each, element j of
 * column c at [j * inner + c]. Every loop runs along the columns, so it is
 * contiguous and vectorises. */
GX_CPU_CLONES static void s_softmax_cols(int64_t n, int64_t inner, int64_t w, float *restrict y,
                           const float *restrict x)
{
    float mx[S_COLS], sum[S_COLS];
    for (int64_t c = 0; c < w; c++) {
        mx[c] = x[c];
        sum[c] = 0.0f;
    }
    for (int64_t j = 1; j < n; j++) {
        const float *xr = x + j * inner;
        for (int64_t c = 0; c < w; c++)
            mx[c] = xr[c] > mx[c] ? xr[c] : mx[c];
    }
    for (int64_t j = 0; j < n; j++) {
        const float *xr = x + j * inner;
        float *yr = y + j * inner;
        for (int64_t c = 0; c < w; c++) {
            const float e = gx_v_expf(xr[c] - mx[c]);
            yr[c] = e;
            sum[c] += e;
        }
    }
    for (int64_t c = 0; c < w; c++)
        sum[c] = 1.0f / sum[c];
    for (int64_t j = 0; j < n; j++) {
        float *yr = y + j * inner;
        for (int64_t c = 0; c < w; c++)
            yr[c] *= sum[c];
    }
}

/* One contiguous row of n > 0 elements: log(softmax), as (x - max) -
 * log(sum of exp(x - max)). y holds the exps meanwhile. */
GX_CPU_CLONES static void s_logsoftmax_row(int64_t n, float *restrict y,
                                          const float *restrict x)
{
    const float mx = gx_row_max(n, x);
    for (int64_t i = 0; i < n; i++)
        y[i] = gx_v_expf(x[i] - mx);
    const double sum = gx_row_sum(n, y);
    const float ls = (float)log(sum);
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - mx) - ls;
}

GX_CPU_CLONES static void s_logsoftmax_cols(int64_t n, int64_t inner, int64_t w, float *restrict y,
                              const float *restrict x)
{
    float mx[S_COLS], sum[S_COLS];
    for (int64_t c = 0; c < w; c++) {
        mx[c] = x[c];
        sum[c] = 0.0f;
    }
    for (int64_t j = 1; j < n; j++) {
        const float *xr = x + j * inner;
        for (int64_t c = 0; c < w; c++)
            mx[c] = xr[c] > mx[c] ? xr[c] : mx[c];
    }
    for (int64_t j = 0; j < n; j++) {
        const float *xr = x + j * inner;
        for (int64_t c = 0; c < w; c++)
            sum[c] += gx_v_expf(xr[c] - mx[c]);
    }
    for (int64_t c = 0; c < w; c++)
        sum[c] = logf(sum[c]);
    for (int64_t j = 0; j < n; j++) {
        const float *xr = x + j * inner;
        float *yr = y + j * inner;
        for (int64_t c = 0; c < w; c++)
            yr[c] = (xr[c] - mx[c]) - sum[c];
    }
}

/* 1 at the first maximum of the row, 0 elsewhere. */
static void s_hardmax_row(int64_t n, float *restrict y, const float *restrict x)
{
    int64_t at = 0;
    for (int64_t i = 1; i < n; i++)
        at = x[i] > x[at] ? i : at;
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.0f;
    y[at] = 1.0f;
}

static void s_hardmax_cols(int64_t n, int64_t inner, int64_t w, float *restrict y,
                           const float *restrict x)
{
    float mx[S_COLS];
    int64_t at[S_COLS];
    for (int64_t c = 0; c < w; c++) {
        mx[c] = x[c];
        at[c] = 0;
    }
    for (int64_t j = 1; j < n; j++) {
        const float *xr = x + j * inner;
        for (int64_t c = 0; c < w; c++) {
            at[c] = xr[c] > mx[c] ? j : at[c];
            mx[c] = xr[c] > mx[c] ? xr[c] : mx[c];
        }
    }
    for (int64_t j = 0; j < n; j++) {
        float *yr = y + j * inner;
        for (int64_t c = 0; c < w; c++)
            yr[c] = 0.0f;
    }
    for (int64_t c = 0; c < w; c++)
        y[at[c] * inner + c] = 1.0f;
}

/* Runs row() over this thread's outer rows (inner == 1) or cols() over its
 * columns, S_COLS at a time. */
static void s_along_axis(const gx_kargs *k,
                         void (*row)(int64_t, float *restrict, const float *restrict),
                         void (*cols)(int64_t, int64_t, int64_t, float *restrict,
                                      const float *restrict))
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int axis = x->ndim - 1;
    gx_axis_norm(k->attr[GX_SOFTMAX_AXIS].i, x->ndim, &axis);
    const int64_t outer = gx_shape_numel(axis, x->shape, INT64_MAX);
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const float *px = x->data;
    float *py = y->data;
    int64_t lo, hi;
    if (y->numel == 0)
        return;
    if (inner == 1) {
        gx_cpu_share(k, outer, 1, &lo, &hi);
        for (int64_t o = lo; o < hi; o++)
            row(n, py + o * n, px + o * n);
        return;
    }
    gx_cpu_share(k, outer * inner, GX_CPU_LINE, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        int64_t o = u / inner, c0 = u % inner;
        int64_t c1 = inner - c0 < hi - u ? inner : c0 + (hi - u);
        for (int64_t c = c0; c < c1; c += S_COLS) {
            int64_t w = c1 - c < S_COLS ? c1 - c : S_COLS;
            int64_t off = o * n * inner + c;
            cols(n, inner, w, py + off, px + off);
        }
        u += c1 - c0;
    }
}

void gx_cpu_SOFTMAX(const gx_kargs *k)
{
    s_along_axis(k, s_softmax_row, s_softmax_cols);
}

void gx_cpu_LOGSOFTMAX(const gx_kargs *k)
{
    s_along_axis(k, s_logsoftmax_row, s_logsoftmax_cols);
}

void gx_cpu_HARDMAX(const gx_kargs *k)
{
    s_along_axis(k, s_hardmax_row, s_hardmax_cols);
}
