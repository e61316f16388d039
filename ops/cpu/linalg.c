/*
 * Einsum and Det on the CPU.
 *
 * Einsum of two float32 operands that is a batch of matrix products (each
 * label in both operands and the output: a batch label; in one operand and
 * the output: a row or column label; in both operands only: summed; no
 * label repeated in a term, none broadcast) runs as one: per batch element,
 * A's rows [L, C] and B [C, R] are gathered into a buffer whatever their
 * order in the operands, multiplied by the GEMM's kernels (float32 sums in
 * K order, as a MatMul) and scattered into y; a thread's share is a range
 * of (batch element, block of rows). When every label group of A, B and
 * y is one dim of memory (attention as exported with Einsum,
 * "bhid,bhjd->bhij" and "bhij,bhjd->bhid"), BLAS reads the operands in
 * place, transposed where their columns are the contiguous ones, and
 * writes y directly. Every other Einsum is the general loop: for
 * each output element (a thread's share is a range of them), the sum over
 * every summed label of the product of the operands, each addressed
 * through its per-label strides (0 where it lacks the label, a sum of
 * strides on a diagonal). The innermost summed label is the inner loop.
 * Floats accumulate in double, integers in the wrapping unsigned type of
 * their width.
 *
 * Det factorises each matrix (a thread's share is a range of matrices) by
 * Gaussian elimination with partial pivoting, in a float64 copy in its own
 * place in the scratch memory.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "ops/cpu/cpu.h"
#include "ops/gemm.h"

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

/* Most floats a batch of products gathers (its buffer and offset tables);
 * a larger one runs the general loop. */
#define S_BMM_MAX_FLOATS ((int64_t)4 << 20)
/* Rows a unit of a batch of products takes. */
#define S_BMM_ROWS 64

/* The labels of a batch of products: batch (in both operands and y), rows
 * (A and y), columns (B and y), summed (A and B). */
typedef struct s_bmm {
    int nb, nl, nr, nc;
    int b[GX_MAX_DIMS], l[GX_MAX_DIMS], r[GX_MAX_DIMS], c[GX_EINSUM_MAX_LABELS];
    int64_t B, L, R, C; /* their sizes' products */
} s_bmm;

/* Is e (float32, two operands) a batch of products? Fills m when so. */
static bool s_bmm_of(const gx_kargs *k, const gx_einsum *e, s_bmm *m)
{
    if (e->n_in != 2 || k->out[0].dtype != GX_F32 || k->out[0].numel == 0)
        return false;
    for (int i = 0; i < 2; i++) { /* every dim its own label: no diagonal, no broadcast */
        int n = 0;
        for (int l = 0; l < e->n_labels; l++)
            n += e->stride[i][l] != 0;
        if (n != k->in[i].ndim)
            return false;
    }
    memset(m, 0, sizeof *m);
    m->B = m->L = m->R = m->C = 1;
    bool in_out[GX_EINSUM_MAX_LABELS] = {false};
    for (int d = 0; d < e->out_ndim; d++) {
        const int l = e->out_label[d];
        const bool a = e->stride[0][l] != 0, b = e->stride[1][l] != 0;
        in_out[l] = true;
        if (a && b)
            m->b[m->nb++] = l, m->B *= e->size[l];
        else if (a)
            m->l[m->nl++] = l, m->L *= e->size[l];
        else if (b)
            m->r[m->nr++] = l, m->R *= e->size[l];
        else
            return false;
    }
    for (int l = 0; l < e->n_labels; l++) {
        if (in_out[l])
            continue;
        if (!e->stride[0][l] || !e->stride[1][l]) /* summed over one operand alone */
            return false;
        m->c[m->nc++] = l, m->C *= e->size[l];
    }
    const int64_t rows = m->L < S_BMM_ROWS ? m->L : S_BMM_ROWS;
    return m->C > 0 && rows * m->C + m->C * m->R + rows * m->R + 3 * m->B + 2 * m->L +
                               2 * m->C + 2 * m->R <=
                           S_BMM_MAX_FLOATS;
}

/* off[index] for every index (row-major over the n labels lab, their
 * sizes' product in all): the offset in an operand of strides st (per
 * label), or in y (st NULL: row-major over e->out_label). */
static void s_offsets(const gx_einsum *e, const int64_t *st, const int *lab, int n, int64_t all,
                      int64_t *off)
{
    int64_t stride[GX_EINSUM_MAX_LABELS];
    for (int d = 0; d < n; d++) {
        stride[d] = st ? st[lab[d]] : 1;
        for (int o = e->out_ndim - 1; !st && e->out_label[o] != lab[d]; o--)
            stride[d] *= e->size[e->out_label[o]];
    }
    for (int64_t index = 0; index < all; index++) {
        int64_t o = 0, rest = index;
        for (int d = n - 1; d >= 0; d--) {
            const int64_t size = e->size[lab[d]];
            o += rest % size * stride[d];
            rest /= size;
        }
        off[index] = o;
    }
}

/* Is off[i] = i * *stride for i < n (a label group one dim of memory)? */
static bool s_affine(const int64_t *off, int64_t n, int64_t *stride)
{
    *stride = n > 1 ? off[1] - off[0] : 1;
    for (int64_t i = 0; i < n; i++)
        if (off[i] != i * *stride)
            return false;
    return true;
}

/* A rows x cols matrix whose elements are rs and cs apart as BLAS takes
 * it (row-major, trans when its columns are the contiguous ones, ld at
 * least the stored rows' length); false when neither is contiguous. */
static bool s_blas_view(int64_t rs, int64_t cs, int64_t rows, int64_t cols, bool *trans,
                        int64_t *ld)
{
    if (cs == 1 || cols == 1) {
        *trans = false;
        *ld = rows > 1 ? rs : cols;
        return *ld >= cols && *ld <= INT32_MAX;
    }
    if (rs == 1 || rows == 1) {
        *trans = true;
        *ld = cols > 1 ? cs : rows;
        return *ld >= rows && *ld <= INT32_MAX;
    }
    return false;
}

static bool s_einsum_bmm(const gx_kargs *k, const gx_einsum *e, const s_bmm *m)
{
    const int64_t blocks = (m->L + S_BMM_ROWS - 1) / S_BMM_ROWS;
    const int64_t rows = m->L < S_BMM_ROWS ? m->L : S_BMM_ROWS;
    int64_t lo, hi;
    gx_cpu_share(k, m->B * blocks, 1, &lo, &hi);
    if (lo >= hi)
        return true;
    /* the buffers (A's rows, B, the product) and the offset tables of
     * every label group in each operand and in y */
    const int64_t floats = rows * m->C + m->C * m->R + rows * m->R;
    const int64_t offs = 3 * m->B + 2 * m->L + 2 * m->C + 2 * m->R;
    int64_t *ab = malloc((size_t)offs * sizeof *ab + (size_t)floats * sizeof(float));
    if (!ab)
        return false; /* the general loop, without memory of its own */
    int64_t *bb = ab + m->B, *yb = bb + m->B;
    int64_t *al = yb + m->B, *yl = al + m->L, *ac = yl + m->L, *bc = ac + m->C;
    int64_t *br = bc + m->C, *yr = br + m->R;
    float *a = (float *)(yr + m->R), *bm = a + rows * m->C, *ym = bm + m->C * m->R;
    s_offsets(e, e->stride[0], m->b, m->nb, m->B, ab);
    s_offsets(e, e->stride[1], m->b, m->nb, m->B, bb);
    s_offsets(e, NULL, m->b, m->nb, m->B, yb);
    s_offsets(e, e->stride[0], m->l, m->nl, m->L, al);
    s_offsets(e, NULL, m->l, m->nl, m->L, yl);
    s_offsets(e, e->stride[0], m->c, m->nc, m->C, ac);
    s_offsets(e, e->stride[1], m->c, m->nc, m->C, bc);
    s_offsets(e, e->stride[1], m->r, m->nr, m->R, br);
    s_offsets(e, NULL, m->r, m->nr, m->R, yr);
    const float *x0 = k->in[0].data, *x1 = k->in[1].data;
    float *y = k->out[0].data;
    /* each operand's rows and columns one dim of memory each (a matmul of
     * transposed or strided matrices, as attention's Einsums are): BLAS
     * reads them in place and writes y */
    int64_t sl, sc, sbc, sbr, syl, syr, lda, ldb, ldy;
    bool ta, tb, ty;
    if (s_affine(al, m->L, &sl) && s_affine(ac, m->C, &sc) && s_affine(bc, m->C, &sbc) &&
        s_affine(br, m->R, &sbr) && s_affine(yl, m->L, &syl) && s_affine(yr, m->R, &syr) &&
        s_blas_view(sl, sc, m->L, m->C, &ta, &lda) &&
        s_blas_view(sbc, sbr, m->C, m->R, &tb, &ldb) &&
        s_blas_view(syl, syr, m->L, m->R, &ty, &ldy) && !ty) {
        for (int64_t u = lo; u < hi; u++) {
            const int64_t bi = u / blocks, l0 = u % blocks * S_BMM_ROWS;
            const int64_t nl = m->L - l0 < S_BMM_ROWS ? m->L - l0 : S_BMM_ROWS;
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, (int)nl, (int)m->R, (int)m->C, 1.0f,
                        x0 + ab[bi] + l0 * sl, (int)lda, x1 + bb[bi], (int)ldb, 0.0f,
                        y + yb[bi] + l0 * syl, (int)ldy);
        }
        free(ab);
        return true;
    }
    int64_t have = -1; /* the batch element whose B is in bm */
    for (int64_t u = lo; u < hi; u++) {
        const int64_t bi = u / blocks, l0 = u % blocks * S_BMM_ROWS;
        const int64_t nl = m->L - l0 < S_BMM_ROWS ? m->L - l0 : S_BMM_ROWS;
        if (have != bi) { /* B [C, R] of batch element bi */
            for (int64_t c = 0; c < m->C; c++)
                for (int64_t r = 0; r < m->R; r++)
                    bm[c * m->R + r] = x1[bb[bi] + bc[c] + br[r]];
            have = bi;
        }
        for (int64_t l = 0; l < nl; l++) /* A's rows [nl, C] */
            for (int64_t c = 0; c < m->C; c++)
                a[l * m->C + c] = x0[ab[bi] + al[l0 + l] + ac[c]];
        if (m->C * m->R <= GX_GEMM_PLAIN_MAX_B)
            gx_cpu_gemm_rows(nl, m->R, m->C, a, m->C, bm, m->R, ym, m->R, false);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nl, (int)m->R,
                        (int)m->C, 1.0f, a, (int)m->C, bm, (int)m->R, 0.0f, ym, (int)m->R);
        for (int64_t l = 0; l < nl; l++)
            for (int64_t r = 0; r < m->R; r++)
                y[yb[bi] + yl[l0 + l] + yr[r]] = ym[l * m->R + r];
    }
    free(ab);
    return true;
}

void gx_cpu_EINSUM(const gx_kargs *k)
{
    gx_einsum e;
    gx_einsum_parse(k->attr[GX_EINSUM_EQUATION].s, k->n_in, k->in, &e, NULL, 0);
    s_bmm m;
    if (s_bmm_of(k, &e, &m) && s_einsum_bmm(k, &e, &m))
        return;
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
