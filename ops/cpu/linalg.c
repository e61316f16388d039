/*
 * Einsum and Det on the CPU.
 *
 * Einsum is the general loop: for each output element (a thread's share is
 * a range of them), the sum over every summed label of the product of the
 * operands, each addressed through its per-label strides (0 where it lacks
 * the label, a sum of strides on a diagonal). The innermost summed label
 * is the inner loop. Floats accumulate in double, integers in the wrapping
 * unsigned type of their width.
 *
 * Det factorises each matrix (a thread's share is a range of matrices) by
 * Gaussian elimination with partial pivoting, in a float64 copy in its own
 * place in the scratch memory.
 */
#include <math.h>

#include "ops/cpu/cpu.h"

/* ---- Einsum ---- */

#define S_EINSUM_FN(DT, T, ACC)                                               \
    static void s_einsum_##DT(const gx_kargs *k, const gx_einsum *e, int64_t lo, int64_t hi) \
    {                                                                         \
        const int n_in = e->n_in;                                             \
        const T *x[GX_EINSUM_MAX_IN];                                         \
        for (int i = 0; i < n_in; i++)                                        \
            x[i] = k->in[i].data;                                             \
        T *y = k->out[0].data;                                                \
        /* the innermost summed label, and an odometer over the others */     \
        int64_t len = 1, step[GX_EINSUM_MAX_IN] = {0}, outer = 1;             \
        int n_outer = e->n_sum > 0 ? e->n_sum - 1 : 0;                        \
        if (e->n_sum > 0) {                                                   \
            const int l = e->sum_label[e->n_sum - 1];                         \
            len = e->size[l];                                                 \
            for (int i = 0; i < n_in; i++)                                    \
                step[i] = e->stride[i][l];                                    \
        }                                                                     \
        for (int d = 0; d < n_outer; d++)                                     \
            outer *= e->size[e->sum_label[d]];                                \
        int64_t oidx[GX_MAX_DIMS], base[GX_EINSUM_MAX_IN] = {0};              \
        int64_t rest = lo;                                                    \
        for (int d = e->out_ndim - 1; d >= 0; d--) {                          \
            const int l = e->out_label[d];                                    \
            oidx[d] = rest % e->size[l];                                      \
            rest /= e->size[l];                                               \
            for (int i = 0; i < n_in; i++)                                    \
                base[i] += oidx[d] * e->stride[i][l];                         \
        }                                                                     \
        for (int64_t o = lo; o < hi; o++) {                                   \
            ACC acc = 0;                                                      \
            int64_t sidx[GX_EINSUM_MAX_LABELS] = {0}, off[GX_EINSUM_MAX_IN];  \
            for (int i = 0; i < n_in; i++)                                    \
                off[i] = base[i];                                             \
            for (int64_t s = 0; s < outer && len > 0; s++) {                  \
                for (int64_t j = 0; j < len; j++) {                           \
                    ACC p = (ACC)x[0][off[0] + j * step[0]];                  \
                    for (int i = 1; i < n_in; i++)                            \
                        p *= (ACC)x[i][off[i] + j * step[i]];                 \
                    acc += p;                                                 \
                }                                                             \
                for (int d = n_outer - 1; d >= 0; d--) {                      \
                    const int l = e->sum_label[d];                            \
                    for (int i = 0; i < n_in; i++)                            \
                        off[i] += e->stride[i][l];                            \
                    if (++sidx[d] < e->size[l])                               \
                        break;                                                \
                    for (int i = 0; i < n_in; i++)                            \
                        off[i] -= sidx[d] * e->stride[i][l];                  \
                    sidx[d] = 0;                                              \
                }                                                             \
            }                                                                 \
            y[o] = (T)acc;                                                    \
            for (int d = e->out_ndim - 1; d >= 0; d--) {                      \
                const int l = e->out_label[d];                                \
                for (int i = 0; i < n_in; i++)                                \
                    base[i] += e->stride[i][l];                               \
                if (++oidx[d] < e->size[l])                                   \
                    break;                                                    \
                for (int i = 0; i < n_in; i++)                                \
                    base[i] -= oidx[d] * e->stride[i][l];                     \
                oidx[d] = 0;                                                  \
            }                                                                 \
        }                                                                     \
    }

S_EINSUM_FN(F32, float, double)
S_EINSUM_FN(F64, double, double)
S_EINSUM_FN(I32, int32_t, uint32_t)
S_EINSUM_FN(I64, int64_t, uint64_t)
S_EINSUM_FN(U32, uint32_t, uint32_t)
S_EINSUM_FN(U64, uint64_t, uint64_t)

typedef void (*s_einsum_fn)(const gx_kargs *k, const gx_einsum *e, int64_t lo, int64_t hi);

static const s_einsum_fn s_einsum_tab[GX_DTYPE_COUNT] = {
    [GX_F32] = s_einsum_F32, [GX_F64] = s_einsum_F64, [GX_I32] = s_einsum_I32,
    [GX_I64] = s_einsum_I64, [GX_U32] = s_einsum_U32, [GX_U64] = s_einsum_U64,
};

void gx_cpu_EINSUM(const gx_kargs *k)
{
    gx_einsum e;
    gx_einsum_parse(k->attr[GX_EINSUM_EQUATION].s, k->n_in, k->in, &e, NULL, 0);
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].numel, GX_CPU_LINE, &lo, &hi);
    if (lo < hi)
        s_einsum_tab[k->out[0].dtype](k, &e, lo, hi);
}

/* ---- Det ---- */

/* Determinant of the m x m matrix a (row-major, destroyed). */
static double s_det_lu(double *a, int64_t m)
{
    double det = 1.0;
    for (int64_t c = 0; c < m; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < m; r++) {
            if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
                p = r;
        }
        const double piv = a[p * m + c];
        if (piv == 0.0)
            return 0.0;
        if (p != c) {
            for (int64_t j = c; j < m; j++) {
                const double t = a[c * m + j];
                a[c * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        det *= piv;
        for (int64_t r = c + 1; r < m; r++) {
            const double f = a[r * m + c] / piv;
            double *restrict ar = a + r * m;
            const double *restrict ac = a + c * m;
            for (int64_t j = c + 1; j < m; j++)
                ar[j] -= f * ac[j];
        }
    }
    return det;
}

void gx_cpu_DET(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t m = x->shape[x->ndim - 1], mm = m * m;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, 1, &lo, &hi);
    double *work = k->scratch;
    for (int64_t b = lo; b < hi && m == 0; b++) { /* empty matrices: the empty product */
        if (y->dtype == GX_F64)
            ((double *)y->data)[b] = 1.0;
        else
            ((float *)y->data)[b] = 1.0f;
    }
    for (int64_t b = lo; b < hi && m > 0; b++) {
        double *a = work + b * mm;
        if (x->dtype == GX_F64) {
            memcpy(a, (const double *)x->data + b * mm, (size_t)mm * sizeof *a);
        } else {
            const float *xs = (const float *)x->data + b * mm;
            for (int64_t i = 0; i < mm; i++)
                a[i] = xs[i];
        }
        const double det = s_det_lu(a, m);
        if (y->dtype == GX_F64)
            ((double *)y->data)[b] = det;
        else
            ((float *)y->data)[b] = (float)det;
    }
}
