/*
 * MatMul, Gemm and MatMulInteger on the CPU. float32 and float64 run on
 * OpenBLAS (cblas_sgemm / cblas_dgemm, row-major), but a float32 MatMul
 * whose B stays in cache runs the register-blocked kernels of ops/gemm.h
 * on B in place (a constant B is packed at compile time instead:
 * gemm_packed.c and daemon/compile/prepare.c); the integer dtypes and
 * MatMulInteger's 8-bit operands run plain loops with wrapping arithmetic.
 * A thread's share is a range of output rows (over all batches for the
 * MatMuls), so nth threads issue nth independent products on disjoint rows
 * of Y. Float dims fit a BLAS int: the schemas checked it.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/gemm.h"

/* y[m,n] (row stride n) = alpha * op(a) op(b) + beta * y for one dtype;
 * with beta == 0, y is only written. Strides are in elements. */
typedef void (*s_gemm_fn)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                          const void *a, int64_t lda, const void *b, int64_t ldb, double beta,
                          void *y);

/* The BLAS ones; k == 0 leaves beta * y (BLAS would want lda >= 1). */
#define S_BLAS_GEMM(DT, T, FN)                                                \
    static void s_gemm_##DT(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, \
                            const void *a, int64_t lda, const void *b, int64_t ldb, double beta, \
                            void *yv)                                         \
    {                                                                         \
        T *y = yv;                                                            \
        if (m == 0 || n == 0)                                                 \
            return;                                                           \
        if (k == 0) {                                                         \
            for (int64_t i = 0; i < m * n; i++)                               \
                y[i] = beta == 0.0 ? (T)0 : (T)beta * y[i];                   \
            return;                                                           \
        }                                                                     \
        FN(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, \
           (int)m, (int)n, (int)k, (T)alpha, a, (int)lda, b, (int)ldb, (T)beta, y, (int)n); \
    }

S_BLAS_GEMM(F32, float, cblas_sgemm)
S_BLAS_GEMM(F64, double, cblas_dgemm)

/* The integer ones: dot products in the unsigned type U of T's width
 * (wrapping, as the narrow type would); alpha and beta are integers (the
 * schema refuses others). */
#define S_INT_GEMM(DT, T, U)                                                  \
    static void s_gemm_##DT(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, \
                            const void *av, int64_t lda, const void *bv, int64_t ldb,     \
                            double beta, void *yv)                            \
    {                                                                         \
        const T *a = av, *b = bv;                                             \
        T *y = yv;                                                            \
        const U ua = (U)(int64_t)alpha, ub = (U)(int64_t)beta;                \
        const int64_t sai = ta ? 1 : lda, sal = ta ? lda : 1;                 \
        const int64_t sbl = tb ? 1 : ldb, sbj = tb ? ldb : 1;                 \
        for (int64_t i = 0; i < m; i++) {                                     \
            for (int64_t j = 0; j < n; j++) {                                 \
                U s = 0;                                                      \
                for (int64_t l = 0; l < k; l++)                               \
                    s += (U)a[i * sai + l * sal] * (U)b[l * sbl + j * sbj];   \
                s *= ua;                                                      \
                if (ub != 0)                                                  \
                    s += ub * (U)y[i * n + j];                                \
                y[i * n + j] = (T)s;                                          \
            }                                                                 \
        }                                                                     \
    }

S_INT_GEMM(I32, int32_t, uint32_t)
S_INT_GEMM(I64, int64_t, uint64_t)
S_INT_GEMM(U32, uint32_t, uint32_t)
S_INT_GEMM(U64, uint64_t, uint64_t)

static const s_gemm_fn s_gemm_tab[GX_DTYPE_COUNT] = {
    [GX_F32] = s_gemm_F32, [GX_F64] = s_gemm_F64, [GX_I32] = s_gemm_I32,
    [GX_I64] = s_gemm_I64, [GX_U32] = s_gemm_U32, [GX_U64] = s_gemm_U64,
};

/* ---- the batched MatMuls ---- */

/* One product of a batched MatMul: A [m, kk] x B [kk, n] -> Y [m, n]. */
typedef struct s_mm {
    int64_t m, kk, n;
} s_mm;

/* rows of output matrix bi from row r0, with A's matrix oa and B's ob. */
typedef void (*s_rows_fn)(const gx_kargs *k, const s_mm *mm, int64_t bi, int64_t r0,
                          int64_t rows, int64_t oa, int64_t ob);

/* numpy matmul's walk. The output is [batch..., M?, N?]; A's and B's batch
 * dims broadcast to batch (strides in whole matrices, 0 where broadcast).
 * When B is one matrix shared by all batches and A's batches are laid out
 * like the output's, the batches are just more rows of a single product
 * (one BLAS call instead of one per batch; row r of it is row r % M of
 * A's matrix r / M, so per-row data indexed by oa * M + r stays right). */
static void s_matmul_walk(const gx_kargs *k, s_rows_fn fn)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    s_mm mm = {.m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1,
               .kk = a->shape[a->ndim - 1],
               .n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1};
    const int nbd = y->ndim - (a->ndim > 1) - (b->ndim > 1);
    const int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    int64_t nbatch = gx_shape_numel(nbd, y->shape, INT64_MAX);
    int64_t sa[GX_MAX_DIMS], sb[GX_MAX_DIMS];
    gx_bcast_strides(nbd, nba, a->shape, sa);
    gx_bcast_strides(nbd, nbb, b->shape, sb);
    if (mm.m == 0 || mm.n == 0 || nbatch <= 0)
        return;
    bool b_shared = true;
    for (int d = 0; d < nbd; d++)
        b_shared &= sb[d] == 0;
    if (b_shared && gx_shape_numel(nba, a->shape, INT64_MAX) == nbatch &&
        nbatch <= INT_MAX / mm.m) {
        mm.m *= nbatch;
        nbatch = 1;
    }
    int64_t lo, hi;
    gx_cpu_share(k, nbatch * mm.m, 1, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        int64_t bi = u / mm.m, r0 = u % mm.m;
        int64_t rows = mm.m - r0 < hi - u ? mm.m - r0 : hi - u;
        int64_t oa = 0, ob = 0, rest = bi;
        for (int d = nbd - 1; d >= 0 && nbatch > 1; d--) {
            int64_t i = rest % y->shape[d];
            rest /= y->shape[d];
            oa += i * sa[d];
            ob += i * sb[d];
        }
        fn(k, &mm, bi, r0, rows, oa, ob);
        u += rows;
    }
}

static void s_matmul_rows(const gx_kargs *k, const s_mm *mm, int64_t bi, int64_t r0,
                          int64_t rows, int64_t oa, int64_t ob)
{
    const gx_dtype dt = k->out[0].dtype;
    const int64_t es = (int64_t)gx_dtype_size(dt);
    const char *pa = k->in[0].data, *pb = k->in[1].data;
    char *py = k->out[0].data;
    if (dt == GX_F32 && mm->n >= GX_GEMM_PANEL && mm->kk > 0 &&
        mm->kk * mm->n <= GX_GEMM_PLAIN_MAX_B) { /* B in cache: no BLAS packing */
        gx_cpu_gemm_rows(rows, mm->n, mm->kk, (const float *)pa + (oa * mm->m + r0) * mm->kk,
                         mm->kk, (const float *)pb + ob * mm->kk * mm->n, mm->n,
                         (float *)py + (bi * mm->m + r0) * mm->n, mm->n, false);
        return;
    }
    s_gemm_tab[dt](false, false, rows, mm->n, mm->kk, 1.0, pa + (oa * mm->m + r0) * mm->kk * es,
                   mm->kk, pb + ob * mm->kk * mm->n * es, mm->n, 0.0,
                   py + (bi * mm->m + r0) * mm->n * es);
}

void gx_cpu_MATMUL(const gx_kargs *k)
{
    s_matmul_walk(k, s_matmul_rows);
}

/* ---- MatMulInteger ---- */

/* rows of (A - za) x (B - zb) in int32 (wrapping). za[r] is row r's zero
 * point (zas 0: one for all), zb[j] column j's (zbs 0: one for all). The
 * loops run i-l-j so that the innermost one is contiguous. */
typedef void (*s_mmi_fn)(int64_t rows, int64_t n, int64_t kk, const void *a, const void *za,
                         int64_t zas, const void *b, const void *zb, int64_t zbs, int32_t *y);

#define S_MMI_FN(NA, TA, NB, TB)                                              \
    static void s_mmi_##NA##_##NB(int64_t rows, int64_t n, int64_t kk, const void *av, \
                                  const void *zav, int64_t zas, const void *bv, \
                                  const void *zbv, int64_t zbs, int32_t *yv)  \
    {                                                                         \
        const TA *a = av, *za = zav;                                          \
        const TB *b = bv, *zb = zbv;                                          \
        uint32_t *restrict y = (uint32_t *)yv;                                \
        for (int64_t i = 0; i < rows; i++) {                                  \
            uint32_t *restrict yr = y + i * n;                                \
            const int32_t zai = za ? za[i * zas] : 0;                         \
            for (int64_t j = 0; j < n; j++)                                   \
                yr[j] = 0;                                                    \
            for (int64_t l = 0; l < kk; l++) {                                \
                const int32_t x = (int32_t)a[i * kk + l] - zai;               \
                const TB *restrict br = b + l * n;                            \
                if (zb && zbs) {                                              \
                    for (int64_t j = 0; j < n; j++)                           \
                        yr[j] += (uint32_t)(x * ((int32_t)br[j] - (int32_t)zb[j])); \
                } else {                                                      \
                    const int32_t z = zb ? zb[0] : 0;                         \
                    for (int64_t j = 0; j < n; j++)                           \
                        yr[j] += (uint32_t)(x * ((int32_t)br[j] - z));        \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

S_MMI_FN(U8, uint8_t, U8, uint8_t)
S_MMI_FN(U8, uint8_t, I8, int8_t)
S_MMI_FN(I8, int8_t, U8, uint8_t)
S_MMI_FN(I8, int8_t, I8, int8_t)

static void s_mmi_rows(const gx_kargs *k, const s_mm *mm, int64_t bi, int64_t r0, int64_t rows,
                       int64_t oa, int64_t ob)
{
    const gx_view *a = &k->in[0], *b = &k->in[1];
    const gx_view *za = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    const gx_view *zb = k->n_in > 3 && k->in[3].ndim >= 0 ? &k->in[3] : NULL;
    const bool ia = a->dtype == GX_I8, ib = b->dtype == GX_I8;
    const s_mmi_fn fn = ia ? (ib ? s_mmi_I8_I8 : s_mmi_I8_U8) : (ib ? s_mmi_U8_I8 : s_mmi_U8_U8);
    /* a zero point is one value or one per row of A (column of B) of each
     * matrix: element oa * M + r (ob * N + j) */
    const bool za_rows = za && za->numel > 1, zb_cols = zb && zb->numel > 1;
    const char *pza = za ? (const char *)za->data + (za_rows ? oa * mm->m + r0 : 0) : NULL;
    const char *pzb = zb ? (const char *)zb->data + (zb_cols ? ob * mm->n : 0) : NULL;
    fn(rows, mm->n, mm->kk, (const char *)a->data + (oa * mm->m + r0) * mm->kk, pza, za_rows,
       (const char *)b->data + ob * mm->kk * mm->n, pzb, zb_cols,
       (int32_t *)k->out[0].data + (bi * mm->m + r0) * mm->n);
}

void gx_cpu_MATMUL_INTEGER(const gx_kargs *k)
{
    s_matmul_walk(k, s_mmi_rows);
}

/* ---- Gemm ---- */

/* ONNX Gemm: Y = alpha * op(A) op(B) + beta * C. This thread's rows of Y
 * first receive C (broadcast), then the product accumulates onto them with
 * beta. With beta == 0 C is not read (so an inf or NaN in C does not leak). */
void gx_cpu_GEMM(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const gx_view *c = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    const bool ta = k->attr[GX_GEMM_TRANSA].i != 0, tb = k->attr[GX_GEMM_TRANSB].i != 0;
    const double alpha = k->attr[GX_GEMM_ALPHA].f, beta = k->attr[GX_GEMM_BETA].f;
    const int64_t m = y->shape[0], n = y->shape[1], kk = a->shape[ta ? 0 : 1];
    const size_t es = gx_dtype_size(y->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, m, 1, &lo, &hi);
    if (lo >= hi || n == 0)
        return;
    char *py = y->data;
    double cbeta = 0.0;
    if (c && beta != 0.0) {
        int64_t cs[2];
        gx_bcast_strides(2, c->ndim, c->shape, cs);
        const char *pc = c->data;
        for (int64_t i = lo; i < hi; i++) {
            char *row = py + (size_t)(i * n) * es;
            const char *crow = pc + (size_t)(i * cs[0]) * es;
            if (cs[1]) {
                memcpy(row, crow, (size_t)n * es);
            } else {
                for (int64_t j = 0; j < n; j++)
                    memcpy(row + (size_t)j * es, crow, es);
            }
        }
        cbeta = beta;
    }
    /* (with K == 0, A may have no data to point into) */
    const char *pa = (const char *)a->data + (kk > 0 ? (size_t)(ta ? lo : lo * kk) * es : 0);
    s_gemm_tab[y->dtype](ta, tb, hi - lo, n, kk, alpha, pa, ta ? m : kk, b->data, tb ? kk : n,
                         cbeta, py + (size_t)(lo * n) * es);
}

/* ---- the tune registry's MatMul candidates (the CPU table's gemm_tune) ---- */

void gx_cpu_matmul_blas(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    const int64_t rows = kk > 0 ? a->numel / kk : 0;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    if (lo >= hi || n == 0)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(hi - lo), (int)n, (int)kk, 1.0f,
                (const float *)a->data + lo * kk, (int)kk, b->data, (int)n, 0.0f,
                (float *)y->data + lo * n, (int)n);
}

void gx_cpu_matmul_plain_b(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    const int64_t rows = kk > 0 ? a->numel / kk : 0;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    if (lo < hi)
        gx_cpu_gemm_rows(hi - lo, n, kk, (const float *)a->data + lo * kk, kk, b->data, n,
                         (float *)y->data + lo * n, n, false);
}
