/* Schemas of MatMul (numpy matmul: 1-D operands, broadcast batch dims) and
 * Gemm (2-D, optional transposes, alpha/beta, C unidirectionally broadcast
 * to [M,N]). Both are float32 only and are run by BLAS, whose dims are int. */
#include <limits.h>

#include "ops/schema.h"

/* GX_OK when each of n dims fits a BLAS int; else GX_EUNSUPPORTED. */
static int s_check_blas_dims(gx_infer *ic, const char *op, int n, const int64_t *dims)
{
    for (int i = 0; i < n; i++) {
        if (dims[i] > INT_MAX)
            return gx_infer_errf(ic, GX_EUNSUPPORTED,
                                 "%s: dimension %lld exceeds the BLAS limit %d", op,
                                 (long long)dims[i], INT_MAX);
    }
    return GX_OK;
}

/* MatMul: A [..., M, K] x B [..., K, N] -> [batch..., M, N] where batch is the
 * broadcast of both batch shapes; a 1-D A is [1, K] and a 1-D B is [K, 1],
 * and the dim they add is dropped from the output. */
static int s_infer_matmul(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_f32(ic, "MatMul", 0)) < 0 ||
        (rc = gx_infer_need_f32(ic, "MatMul", 1)) < 0)
        return rc;
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    gx_shape_str(a->ndim, a->shape, sa, sizeof sa);
    gx_shape_str(b->ndim, b->shape, sb, sizeof sb);
    if (a->ndim < 1 || b->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "MatMul: A is %s and B is %s; both need rank >= 1",
                             sa, sb);
    int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1;
    int64_t k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim > 1 ? b->shape[b->ndim - 2] : b->shape[0];
    int64_t n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    if (k != kb)
        return gx_infer_errf(ic, GX_ESHAPE, "MatMul: A is %s but B is %s (K mismatch)", sa, sb);
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if (!gx_broadcast_shape(a->ndim > 2 ? a->ndim - 2 : 0, a->shape, b->ndim > 2 ? b->ndim - 2 : 0,
                            b->shape, &nd, shape))
        return gx_infer_errf(ic, GX_ESHAPE,
                             "MatMul: batch dims of A %s and B %s are not broadcastable", sa, sb);
    if ((rc = s_check_blas_dims(ic, "MatMul", 3, (int64_t[]){m, k, n})) < 0)
        return rc;
    if (a->ndim > 1)
        shape[nd++] = m;
    if (b->ndim > 1)
        shape[nd++] = n;
    gx_view_set(&ic->out[0], GX_F32, nd, shape);
    return GX_OK;
}

static gx_cost s_cost_matmul(const gx_infer *ic)
{
    const gx_view *a = &ic->in[0];
    double k = (double)a->shape[a->ndim - 1];
    return (gx_cost){.flops = 2.0 * k * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_MATMUL = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = s_infer_matmul, .cost = s_cost_matmul,
};

static const gx_attr_spec s_gemm_attrs[] = {
    [GX_GEMM_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1.0},
    [GX_GEMM_BETA] = {.name = "beta", .type = GX_ATTR_FLOAT, .def_f = 1.0},
    [GX_GEMM_TRANSA] = {.name = "transA", .type = GX_ATTR_INT, .def_i = 0},
    [GX_GEMM_TRANSB] = {.name = "transB", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_gemm_attrs / sizeof s_gemm_attrs[0] == GX_GEMM_NATTRS, "Gemm attrs");

static bool s_gemm_has_c(const gx_infer *ic)
{
    return ic->n_in > 2 && ic->in[2].ndim >= 0;
}

/* Gemm: Y[M,N] = alpha * op(A) op(B) + beta * C, op() transposing when
 * transA / transB is non-zero; C (optional) broadcasts to [M,N]. */
static int s_infer_gemm(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_f32(ic, "Gemm", 0)) < 0 ||
        (rc = gx_infer_need_f32(ic, "Gemm", 1)) < 0 ||
        (s_gemm_has_c(ic) && (rc = gx_infer_need_f32(ic, "Gemm", 2)) < 0))
        return rc;
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    gx_shape_str(a->ndim, a->shape, sa, sizeof sa);
    gx_shape_str(b->ndim, b->shape, sb, sizeof sb);
    if (a->ndim != 2 || b->ndim != 2)
        return gx_infer_errf(ic, GX_ESHAPE, "Gemm: A is %s and B is %s; both must be 2-D", sa,
                             sb);
    bool ta = ic->attr[GX_GEMM_TRANSA].i != 0, tb = ic->attr[GX_GEMM_TRANSB].i != 0;
    int64_t m = a->shape[ta ? 1 : 0], k = a->shape[ta ? 0 : 1];
    int64_t kb = b->shape[tb ? 1 : 0], n = b->shape[tb ? 0 : 1];
    if (k != kb)
        return gx_infer_errf(ic, GX_ESHAPE, "Gemm: A is %s but B is %s (K mismatch%s)", sa, sb,
                             ta && tb ? " with transA=1 transB=1"
                             : ta     ? " with transA=1"
                             : tb     ? " with transB=1"
                                      : "");
    if (s_gemm_has_c(ic)) {
        const gx_view *c = &ic->in[2];
        const int64_t mn[2] = {m, n};
        bool ok = c->ndim <= 2;
        for (int i = 0; ok && i < c->ndim; i++) {
            int64_t d = c->shape[c->ndim - 1 - i];
            ok = d == 1 || d == mn[1 - i];
        }
        if (!ok) {
            char sc[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "Gemm: C is %s, not unidirectionally broadcastable to [M,N] = "
                                 "[%lld,%lld]",
                                 gx_shape_str(c->ndim, c->shape, sc, sizeof sc), (long long)m,
                                 (long long)n);
        }
    }
    if ((rc = s_check_blas_dims(ic, "Gemm", 3, (int64_t[]){m, k, n})) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, 2, (int64_t[]){m, n});
    return GX_OK;
}

static gx_cost s_cost_gemm(const gx_infer *ic)
{
    const gx_view *a = &ic->in[0];
    double k = (double)a->shape[ic->attr[GX_GEMM_TRANSA].i != 0 ? 0 : 1];
    double mn = (double)gx_view_numel(&ic->out[0]);
    return (gx_cost){.flops = 2.0 * k * mn + (s_gemm_has_c(ic) ? 2.0 * mn : 0.0),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_GEMM = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_gemm_attrs, .n_attrs = GX_GEMM_NATTRS,
    .infer = s_infer_gemm, .cost = s_cost_gemm,
};
