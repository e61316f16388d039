/*
 * MatMul and Gemm on the CPU: OpenBLAS cblas_sgemm on row-major float32.
 * A thread's share is a range of output rows (over all batches for MatMul),
 * so nth threads issue nth independent sgemm calls on disjoint rows of Y.
 * Dims fit a BLAS int: the schemas checked it.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "ops/cpu/cpu.h"

/* y[m,n] (row stride n) = alpha * op(a) op(b) + beta * y; with beta == 0, y
 * is only written. k == 0 leaves beta * y. */
static void s_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *y)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) { /* BLAS would want lda >= 1; the product is empty anyway */
        for (int64_t i = 0; i < m * n; i++)
            y[i] = beta == 0.0f ? 0.0f : beta * y[i];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, y, (int)n);
}

/* numpy matmul. The output is [batch..., M?, N?]; A's and B's batch dims
 * broadcast to batch (strides in whole matrices, 0 where broadcast). When
 * B is one matrix shared by all batches and A's batches are laid out like
 * the output's, the batches are just more rows of a single product. */
void gx_cpu_MATMUL(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1;
    const int64_t kk = a->shape[a->ndim - 1];
    const int64_t n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    const int nbd = y->ndim - (a->ndim > 1) - (b->ndim > 1);
    const int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    int64_t nbatch = gx_shape_numel(nbd, y->shape, INT64_MAX);
    int64_t sa[GX_MAX_DIMS], sb[GX_MAX_DIMS];
    gx_bcast_strides(nbd, nba, a->shape, sa);
    gx_bcast_strides(nbd, nbb, b->shape, sb);
    if (m == 0 || n == 0 || nbatch <= 0)
        return;
    bool b_shared = true;
    for (int d = 0; d < nbd; d++)
        b_shared &= sb[d] == 0;
    if (b_shared && gx_shape_numel(nba, a->shape, INT64_MAX) == nbatch &&
        nbatch <= INT_MAX / m) {
        m *= nbatch;
        nbatch = 1;
    }
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    int64_t lo, hi;
    gx_cpu_share(k, nbatch * m, 1, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        int64_t bi = u / m, r0 = u % m;
        int64_t rows = m - r0 < hi - u ? m - r0 : hi - u;
        int64_t oa = 0, ob = 0, rest = bi;
        for (int d = nbd - 1; d >= 0 && nbatch > 1; d--) {
            int64_t i = rest % y->shape[d];
            rest /= y->shape[d];
            oa += i * sa[d];
            ob += i * sb[d];
        }
        s_sgemm(false, false, rows, n, kk, 1.0f, pa + (oa * m + r0) * kk, kk, pb + ob * kk * n, n,
                0.0f, py + (bi * m + r0) * n);
        u += rows;
    }
}

/* ONNX Gemm: Y = alpha * op(A) op(B) + beta * C. This thread's rows of Y
 * first receive C (broadcast), then sgemm accumulates onto them with beta.
 * With beta == 0 C is not read (so an inf or NaN in C does not leak). */
void gx_cpu_GEMM(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const gx_view *c = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    const bool ta = k->attr[GX_GEMM_TRANSA].i != 0, tb = k->attr[GX_GEMM_TRANSB].i != 0;
    const float alpha = (float)k->attr[GX_GEMM_ALPHA].f, beta = (float)k->attr[GX_GEMM_BETA].f;
    const int64_t m = y->shape[0], n = y->shape[1], kk = a->shape[ta ? 0 : 1];
    int64_t lo, hi;
    gx_cpu_share(k, m, 1, &lo, &hi);
    if (lo >= hi || n == 0)
        return;
    float *py = y->data;
    float cbeta = 0.0f;
    if (c && beta != 0.0f) {
        int64_t cs[2];
        gx_bcast_strides(2, c->ndim, c->shape, cs);
        const float *pc = c->data;
        for (int64_t i = lo; i < hi; i++) {
            float *restrict row = py + i * n;
            const float *crow = pc + i * cs[0];
            if (cs[1]) {
                memcpy(row, crow, (size_t)n * sizeof *row);
            } else {
                const float v = crow[0];
                for (int64_t j = 0; j < n; j++)
                    row[j] = v;
            }
        }
        cbeta = beta;
    }
    const float *pa = (const float *)a->data + (ta ? lo : lo * kk);
    s_sgemm(ta, tb, hi - lo, n, kk, alpha, pa, ta ? m : kk, b->data, tb ? kk : n, cbeta,
            py + lo * n);
}
