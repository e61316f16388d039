/* Schemas of the linalg family: MatMul (numpy matmul: 1-D operands,
 * broadcast batch dims), Gemm (2-D, optional transposes, alpha/beta, C
 * unidirectionally broadcast to [M,N]), MatMulInteger (8-bit operands with
 * zero points, int32 result), Einsum (the equation parser shared with the
 * kernel is here) and Det (batched). Float MatMul and Gemm run on BLAS,
 * whose dims are int. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/schema.h"

#define S_FLOATS (GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64))
/* MatMul, Gemm and Einsum: the float and 32/64-bit integer dtypes */
#define S_NUMERIC                                                             \
    (S_FLOATS | GX_DT_BIT(GX_I32) | GX_DT_BIT(GX_I64) | GX_DT_BIT(GX_U32) | GX_DT_BIT(GX_U64))

int gx_infer_need_dtypes(gx_infer *ic, const char *op, int i, unsigned set)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    gx_dtype dt = ic->in[i].dtype;
    if ((unsigned)dt < GX_DTYPE_COUNT && (set & GX_DT_BIT(dt)))
        return GX_OK;
    char names[256] = "";
    size_t len = 0;
    for (int d = 0; d < GX_DTYPE_COUNT; d++) {
        if (set & GX_DT_BIT(d))
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                    gx_dtype_name((gx_dtype)d));
    }
    const char *dn = gx_dtype_name(dt);
    return gx_infer_errf(ic, GX_EDTYPE, "%s: input %d is %s; supported: %s", op, i,
                         dn ? dn : "an unknown dtype", names);
}

/* GX_OK when input i has input j's dtype; else GX_EDTYPE naming both. */
static int s_same_dtype(gx_infer *ic, const char *op, const char *ni, int i, const char *nj,
                        int j)
{
    if (ic->in[i].dtype == ic->in[j].dtype)
        return GX_OK;
    const char *di = gx_dtype_name(ic->in[i].dtype), *dj = gx_dtype_name(ic->in[j].dtype);
    return gx_infer_errf(ic, GX_EDTYPE, "%s: %s is %s but %s is %s", op, ni,
                         di ? di : "an unknown dtype", nj, dj ? dj : "an unknown dtype");
}

static bool s_is_float(gx_dtype dt)
{
    return dt == GX_F32 || dt == GX_F64;
}

/* v is a whole number an int64_t holds (NaN is not). */
static bool s_is_integer(double v)
{
    return v >= -9.2e18 && v <= 9.2e18 && v == (double)(int64_t)v;
}

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

/* numpy matmul shapes: A [..., M, K] x B [..., K, N] -> [batch..., M, N]
 * where batch is the broadcast of both batch shapes; a 1-D A is [1, K] and
 * a 1-D B is [K, 1], and the dim they add is dropped from the output. */
static int s_matmul_shape(gx_infer *ic, const char *op, int *nd, int64_t *shape, int64_t mkn[3])
{
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    gx_shape_str(a->ndim, a->shape, sa, sizeof sa);
    gx_shape_str(b->ndim, b->shape, sb, sizeof sb);
    if (a->ndim < 1 || b->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: A is %s and B is %s; both need rank >= 1", op,
                             sa, sb);
    int64_t m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1;
    int64_t k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim > 1 ? b->shape[b->ndim - 2] : b->shape[0];
    int64_t n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    if (k != kb)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: A is %s but B is %s (K mismatch)", op, sa, sb);
    if (!gx_broadcast_shape(a->ndim > 2 ? a->ndim - 2 : 0, a->shape, b->ndim > 2 ? b->ndim - 2 : 0,
                            b->shape, nd, shape))
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: batch dims of A %s and B %s are not broadcastable", op, sa, sb);
    if (a->ndim > 1)
        shape[(*nd)++] = m;
    if (b->ndim > 1)
        shape[(*nd)++] = n;
    mkn[0] = m;
    mkn[1] = k;
    mkn[2] = n;
    return GX_OK;
}

static int s_infer_matmul(gx_infer *ic)
{
    int rc, nd;
    int64_t shape[GX_MAX_DIMS], mkn[3];
    if ((rc = gx_infer_need_dtypes(ic, "MatMul", 0, S_NUMERIC)) < 0 ||
        (rc = gx_infer_need_dtypes(ic, "MatMul", 1, S_NUMERIC)) < 0 ||
        (rc = s_same_dtype(ic, "MatMul", "B", 1, "A", 0)) < 0 ||
        (rc = s_matmul_shape(ic, "MatMul", &nd, shape, mkn)) < 0)
        return rc;
    if (s_is_float(ic->in[0].dtype) && (rc = s_check_blas_dims(ic, "MatMul", 3, mkn)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, nd, shape);
    return GX_OK;
}

static gx_cost s_cost_matmul(const gx_infer *ic)
{
    const gx_view *a = &ic->in[0];
    double k = (double)a->shape[a->ndim - 1];
    return (gx_cost){.flops = 2.0 * k * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

static bool s_batch_matmul(const gx_batch_ctx *bc)
{
    return bc->n_in == 2 && gx_batch_matmul(bc, 0, 1, 0);
}

const gx_op_schema gx_schema_MATMUL = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = s_infer_matmul, .cost = s_cost_matmul, .batch = s_batch_matmul,
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
    if ((rc = gx_infer_need_dtypes(ic, "Gemm", 0, S_NUMERIC)) < 0 ||
        (rc = gx_infer_need_dtypes(ic, "Gemm", 1, S_NUMERIC)) < 0 ||
        (rc = s_same_dtype(ic, "Gemm", "B", 1, "A", 0)) < 0 ||
        (s_gemm_has_c(ic) && (rc = s_same_dtype(ic, "Gemm", "C", 2, "A", 0)) < 0))
        return rc;
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    const double alpha = ic->attr[GX_GEMM_ALPHA].f, beta = ic->attr[GX_GEMM_BETA].f;
    if (!s_is_float(a->dtype) && (!s_is_integer(alpha) || !s_is_integer(beta)))
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "Gemm: alpha %g and beta %g on %s; integer dtypes need integer "
                             "alpha and beta",
                             alpha, beta, gx_dtype_name(a->dtype));
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
    if (s_is_float(a->dtype) && (rc = s_check_blas_dims(ic, "Gemm", 3, (int64_t[]){m, k, n})) < 0)
        return rc;
    gx_view_set(&ic->out[0], a->dtype, 2, (int64_t[]){m, n});
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

/* The batch is A's rows (transA=0): B and C unbatched, and C, if it has
 * rows, a single one broadcast to all (a C [M, N] adds its own row i to
 * sample i). */
static bool s_batch_gemm(const gx_batch_ctx *bc)
{
    if (bc->attr[GX_GEMM_TRANSA].i != 0 || !gx_batch_samplewise(bc))
        return false;
    const gx_view *c = &bc->in[2];
    return !(bc->n_in > 2 && c->ndim == 2 && c->shape[0] != 1);
}

const gx_op_schema gx_schema_GEMM = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_gemm_attrs, .n_attrs = GX_GEMM_NATTRS,
    .infer = s_infer_gemm, .cost = s_cost_gemm, .batch = s_batch_gemm,
};

/* ---- MatMulInteger ---- */

static bool s_present(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* Zero point zi of operand xi (A: per row, B: per column): its operand's
 * dtype, and a scalar, one value per row (column) as a vector, or the
 * operand's shape with the K dim cut to 1. */
static int s_check_zero_point(gx_infer *ic, int zi, int xi, const char *name, int64_t len)
{
    if (!s_present(ic, zi))
        return GX_OK;
    const gx_view *z = &ic->in[zi], *x = &ic->in[xi];
    int rc = s_same_dtype(ic, "MatMulInteger", zi == 2 ? "a_zero_point" : "b_zero_point", zi,
                          name, xi);
    if (rc < 0)
        return rc;
    bool ok = gx_view_numel(z) == 1 && z->ndim <= 1;
    ok |= z->ndim == 1 && z->shape[0] == len && x->ndim == 2;
    if (!ok && z->ndim == x->ndim && x->ndim >= 2) {
        const int kdim = xi == 0 ? x->ndim - 1 : x->ndim - 2;
        ok = true;
        for (int d = 0; ok && d < x->ndim; d++)
            ok = z->shape[d] == (d == kdim ? 1 : x->shape[d]);
    }
    if (!ok) {
        char sz[GX_SHAPE_STRLEN], sx[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "MatMulInteger: %s is %s; for %s %s it must be a scalar, a vector "
                             "of %lld or %s with its K dim 1",
                             zi == 2 ? "a_zero_point" : "b_zero_point",
                             gx_shape_str(z->ndim, z->shape, sz, sizeof sz), name,
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx), (long long)len,
                             name);
    }
    return GX_OK;
}

/* MatMulInteger: (A - a_zero_point) x (B - b_zero_point) in int32; A and B
 * are uint8 or int8 (each its own), shapes as MatMul. */
static int s_infer_matmul_integer(gx_infer *ic)
{
    const unsigned bytes = GX_DT_BIT(GX_U8) | GX_DT_BIT(GX_I8);
    int rc, nd;
    int64_t shape[GX_MAX_DIMS], mkn[3];
    if ((rc = gx_infer_need_dtypes(ic, "MatMulInteger", 0, bytes)) < 0 ||
        (rc = gx_infer_need_dtypes(ic, "MatMulInteger", 1, bytes)) < 0 ||
        (rc = s_matmul_shape(ic, "MatMulInteger", &nd, shape, mkn)) < 0 ||
        (rc = s_check_zero_point(ic, 2, 0, "A", mkn[0])) < 0 ||
        (rc = s_check_zero_point(ic, 3, 1, "B", mkn[2])) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_I32, nd, shape);
    return GX_OK;
}

/* MatMul's rule; a_zero_point per row of a batched 2-D A mixes. */
static bool s_batch_matmul_integer(const gx_batch_ctx *bc)
{
    return gx_batch_matmul(bc, 0, 1, 1u << 2);
}

const gx_op_schema gx_schema_MATMUL_INTEGER = {
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .infer = s_infer_matmul_integer, .cost = s_cost_matmul, .batch = s_batch_matmul_integer,
};

/* ---- Einsum ---- */

static const gx_attr_spec s_einsum_attrs[] = {
    [GX_EINSUM_EQUATION] = {.name = "equation", .type = GX_ATTR_STRING, .required = true},
};
_Static_assert(sizeof s_einsum_attrs / sizeof s_einsum_attrs[0] == GX_EINSUM_NATTRS,
               "Einsum attrs");

/* Label of a letter: 'A'..'Z' are 0..25, 'a'..'z' 26..51 (ASCII order, as
 * numpy sorts the implicit output); -1 for anything else. */
static int s_letter(char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + (c - 'a') : -1;
}

/* One term of an equation: its letters (as s_letter) in order, and where
 * its "..." is (-1: none). */
typedef struct s_term {
    int n, ell;
    int letter[GX_MAX_DIMS + 1];
} s_term;

/* Parses one term [s, end) into t. */
static int s_parse_term(const char *s, const char *end, s_term *t, const char *what, char *err,
                        size_t errlen)
{
    t->n = 0;
    t->ell = -1;
    for (const char *c = s; c < end; c++) {
        if (*c == '.') {
            if (end - c < 3 || c[1] != '.' || c[2] != '.' || t->ell >= 0)
                return gx_errf(err, errlen, GX_EATTR,
                               "Einsum: %s has a '.' that is not one \"...\"", what);
            t->ell = t->n;
            c += 2;
            continue;
        }
        int l = s_letter(*c);
        if (l < 0)
            return gx_errf(err, errlen, GX_EATTR, "Einsum: %s has the invalid character '%c'",
                           what, *c);
        if (t->n > GX_MAX_DIMS)
            return gx_errf(err, errlen, GX_EATTR, "Einsum: %s has more than %d labels", what,
                           GX_MAX_DIMS);
        t->letter[t->n++] = l;
    }
    return GX_OK;
}

int gx_einsum_parse(const char *equation, int n_in, const gx_view *in, gx_einsum *e, char *err,
                    size_t errlen)
{
    char eq[512];
    size_t len = 0;
    for (const char *c = equation ? equation : ""; *c; c++) {
        if (*c == ' ')
            continue;
        if (len + 1 >= sizeof eq)
            return gx_errf(err, errlen, GX_EUNSUPPORTED, "Einsum: equation longer than %zu",
                           sizeof eq - 1);
        eq[len++] = *c;
    }
    eq[len] = '\0';
    if (n_in > GX_EINSUM_MAX_IN)
        return gx_errf(err, errlen, GX_EUNSUPPORTED, "Einsum: %d operands (at most %d)", n_in,
                       GX_EINSUM_MAX_IN);
    memset(e, 0, sizeof *e);
    e->n_in = n_in;
    char *out = strstr(eq, "->");
    if (out) {
        *out = '\0';
        out += 2;
        if (strstr(out, "->") || strchr(out, ','))
            return gx_errf(err, errlen, GX_EATTR, "Einsum: equation has more than one output");
    }
    /* the input terms, and how many dims the widest "..." stands for */
    s_term term[GX_EINSUM_MAX_IN];
    int n_terms = 0, n_ell = 0;
    for (const char *s = eq;; n_terms++) {
        const char *end = strchr(s, ',');
        end = end ? end : s + strlen(s);
        if (n_terms >= n_in)
            return gx_errf(err, errlen, GX_EATTR,
                           "Einsum: equation has more operands than the %d inputs", n_in);
        char what[32];
        snprintf(what, sizeof what, "operand %d", n_terms);
        int rc = s_parse_term(s, end, &term[n_terms], what, err, errlen);
        if (rc < 0)
            return rc;
        const s_term *t = &term[n_terms];
        const int rank = in[n_terms].ndim;
        if (t->ell < 0 ? t->n != rank : t->n > rank)
            return gx_errf(err, errlen, GX_ESHAPE,
                           "Einsum: operand %d has %d labels%s but rank %d", n_terms, t->n,
                           t->ell < 0 ? "" : " and \"...\"", rank);
        if (t->ell >= 0 && rank - t->n > n_ell)
            n_ell = rank - t->n;
        if (!*end) {
            n_terms++;
            break;
        }
        s = end + 1;
    }
    if (n_terms != n_in)
        return gx_errf(err, errlen, GX_EATTR, "Einsum: equation has %d operands but %d inputs",
                       n_terms, n_in);
    /* labels: the "..." dims first (aligned right), then letters as met */
    int id[52], uses[52];
    for (int l = 0; l < 52; l++)
        id[l] = -1, uses[l] = 0;
    e->n_labels = n_ell;
    for (int l = 0; l < n_ell; l++)
        e->size[l] = 1;
    for (int i = 0; i < n_in; i++) {
        const s_term *t = &term[i];
        const gx_view *x = &in[i];
        const int ell_dims = t->ell < 0 ? 0 : x->ndim - t->n;
        int64_t stride = 1;
        for (int d = x->ndim - 1; d >= 0; d--) {
            const int64_t n = x->shape[d];
            int lab;
            if (t->ell >= 0 && d >= t->ell && d < t->ell + ell_dims) {
                lab = n_ell - ell_dims + (d - t->ell);
                if (n != 1 && e->size[lab] != 1 && e->size[lab] != n)
                    return gx_errf(err, errlen, GX_ESHAPE,
                                   "Einsum: \"...\" dims of the operands do not broadcast "
                                   "(%lld and %lld)",
                                   (long long)e->size[lab], (long long)n);
                if (n != 1) {
                    e->size[lab] = n;
                    e->stride[i][lab] += stride;
                }
            } else {
                const int l = t->letter[d < t->ell || t->ell < 0 ? d : d - ell_dims];
                const char c = (char)(l < 26 ? 'A' + l : 'a' + l - 26);
                uses[l]++;
                if (id[l] < 0) {
                    id[l] = e->n_labels++;
                    e->size[id[l]] = n;
                } else if (e->size[id[l]] != n) {
                    return gx_errf(err, errlen, GX_ESHAPE,
                                   "Einsum: label '%c' has sizes %lld and %lld", c,
                                   (long long)e->size[id[l]], (long long)n);
                }
                lab = id[l];
                e->stride[i][lab] += stride;
            }
            stride *= n;
        }
    }
    /* the output: explicit, or numpy's implicit one ("..." then the letters
     * used once, in ASCII order) */
    bool in_out[GX_EINSUM_MAX_LABELS] = {false};
    if (out) {
        s_term t;
        int rc = s_parse_term(out, out + strlen(out), &t, "the output", err, errlen);
        if (rc < 0)
            return rc;
        if (n_ell > 0 && t.ell < 0)
            return gx_errf(err, errlen, GX_EATTR,
                           "Einsum: the operands have \"...\" dims but the output has no \"...\"");
        if (t.n + (t.ell >= 0 ? n_ell : 0) > GX_MAX_DIMS)
            return gx_errf(err, errlen, GX_EUNSUPPORTED, "Einsum: output rank above %d",
                           GX_MAX_DIMS);
        for (int j = 0; j <= t.n; j++) {
            if (j == t.ell) {
                for (int l = 0; l < n_ell; l++)
                    e->out_label[e->out_ndim++] = l;
            }
            if (j == t.n)
                break;
            const int l = t.letter[j];
            const char c = (char)(l < 26 ? 'A' + l : 'a' + l - 26);
            if (id[l] < 0)
                return gx_errf(err, errlen, GX_EATTR,
                               "Einsum: output label '%c' is in no operand", c);
            if (in_out[id[l]])
                return gx_errf(err, errlen, GX_EATTR, "Einsum: output label '%c' is repeated",
                               c);
            in_out[id[l]] = true;
            e->out_label[e->out_ndim++] = id[l];
        }
    } else {
        for (int l = 0; l < n_ell; l++)
            e->out_label[e->out_ndim++] = l;
        for (int l = 0; l < 52; l++) {
            if (uses[l] != 1)
                continue;
            if (e->out_ndim == GX_MAX_DIMS)
                return gx_errf(err, errlen, GX_EUNSUPPORTED, "Einsum: output rank above %d",
                               GX_MAX_DIMS);
            e->out_label[e->out_ndim++] = id[l];
        }
    }
    for (int d = 0; d < e->out_ndim; d++)
        in_out[e->out_label[d]] = true;
    for (int l = 0; l < e->n_labels; l++) {
        if (!in_out[l])
            e->sum_label[e->n_sum++] = l;
    }
    return GX_OK;
}

/* Einsum: operands of one dtype; the output's dims are its labels' sizes. */
static int s_infer_einsum(gx_infer *ic)
{
    int rc;
    if (ic->n_in < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Einsum: needs at least one input");
    for (int i = 0; i < ic->n_in; i++) {
        if ((rc = gx_infer_need_dtypes(ic, "Einsum", i, S_NUMERIC)) < 0 ||
            (rc = s_same_dtype(ic, "Einsum", i ? "an operand" : "operand 0", i, "operand 0", 0)) <
                0)
            return rc;
    }
    gx_einsum e;
    if ((rc = gx_einsum_parse(ic->attr[GX_EINSUM_EQUATION].s, ic->n_in, ic->in, &e, ic->err,
                              ic->errlen)) < 0)
        return rc;
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < e.out_ndim; d++)
        shape[d] = e.size[e.out_label[d]];
    gx_view_set(&ic->out[0], ic->in[0].dtype, e.out_ndim, shape);
    return GX_OK;
}

/* A multiply per operand for every (output, summed index) pair. */
static gx_cost s_cost_einsum(const gx_infer *ic)
{
    gx_einsum e;
    double sums = 1;
    if (gx_einsum_parse(ic->attr[GX_EINSUM_EQUATION].s, ic->n_in, ic->in, &e, NULL, 0) == GX_OK) {
        for (int i = 0; i < e.n_sum; i++)
            sums *= (double)e.size[e.sum_label[i]];
    }
    return (gx_cost){.flops = sums * ic->n_in * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_EINSUM = {
    .min_in = 1, .max_in = GX_EINSUM_MAX_IN, .min_out = 1, .max_out = 1,
    .attrs = s_einsum_attrs, .n_attrs = GX_EINSUM_NATTRS,
    .infer = s_infer_einsum, .cost = s_cost_einsum,
};

/* ---- Det ---- */

/* Det: X [..., M, M] -> [...]. */
static int s_infer_det(gx_infer *ic)
{
    int rc = gx_infer_need_dtypes(ic, "Det", 0, S_FLOATS);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
        char sx[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "Det: X is %s; expected [..., M, M]",
                             gx_shape_str(x->ndim, x->shape, sx, sizeof sx));
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim - 2, x->shape);
    return GX_OK;
}

/* LU: about M^3 / 3 multiply-adds per matrix. */
static gx_cost s_cost_det(const gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const double m = (double)x->shape[x->ndim - 1];
    return (gx_cost){.flops = 2.0 / 3.0 * m * (double)gx_view_numel(x),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* A float64 copy of every matrix, each factorised in its own place so
 * that threads never share one. */
static size_t s_scratch_det(const gx_infer *ic)
{
    return (size_t)gx_view_numel(&ic->in[0]) * sizeof(double);
}

const gx_op_schema gx_schema_DET = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = s_infer_det, .cost = s_cost_det, .scratch = s_scratch_det,
};
