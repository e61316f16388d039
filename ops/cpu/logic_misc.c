/*
 * CPU kernels of the logic family's index ops: CumSum, Trilu, OneHot,
 * Range, EyeLike, NonZero and Compress. Those that only move elements
 * (Trilu, OneHot, Compress) copy bits by element size; the shapes that
 * depend on values (OneHot's depth, Range's length, NonZero's and
 * Compress's counts) were settled by infer, which saw the values.
 */
#include "ops/cpu/cpu.h"

/* Share boundaries in elements: whole cache lines for any dtype. */
#define S_ALIGN 64

#define S_ID(v) (v)

static int64_t s_prod(int n, const int64_t *dims)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

/* Element i of a tensor of es-byte elements, as an integer of its bits. */
static inline uint64_t s_bits(const void *x, size_t es, int64_t i)
{
    switch (es) {
    case 1:
        return ((const uint8_t *)x)[i];
    case 2:
        return ((const uint16_t *)x)[i];
    case 4:
        return ((const uint32_t *)x)[i];
    default:
        return ((const uint64_t *)x)[i];
    }
}

/* Stores the low es bytes' worth of bits as element i. */
static inline void s_put_bits(void *y, size_t es, int64_t i, uint64_t bits)
{
    switch (es) {
    case 1:
        ((uint8_t *)y)[i] = (uint8_t)bits;
        return;
    case 2:
        ((uint16_t *)y)[i] = (uint16_t)bits;
        return;
    case 4:
        ((uint32_t *)y)[i] = (uint32_t)bits;
        return;
    default:
        ((uint64_t *)y)[i] = bits;
        return;
    }
}

/* ---- CumSum ---- */

/* Columns of one CumSum unit: a unit scans w <= S_SCAN_W adjacent
 * columns together, so it reads rows, not strided columns. */
#define S_SCAN_W 64

/* X(dtype, element type, accumulator, read as accumulator, write back).
 * Integers add in uint64_t, which wraps instead of overflowing; the
 * conversion back keeps the low bits (two's complement). */
#define S_SCAN_DTYPES(X)                                                      \
    X(F32, float, float, S_ID, S_ID)                                          \
    X(F16, uint16_t, float, gx_f16_to_f32, gx_f32_to_f16)                     \
    X(BF16, uint16_t, float, gx_bf16_to_f32, gx_f32_to_bf16)                  \
    X(F64, double, double, S_ID, S_ID)                                        \
    X(I64, int64_t, uint64_t, (uint64_t), (int64_t))                          \
    X(I32, int32_t, uint64_t, (uint64_t), (int32_t))                          \
    X(I8, int8_t, uint64_t, (uint64_t), (int8_t))                             \
    X(U8, uint8_t, uint64_t, (uint64_t), (uint8_t))                           \
    X(I16, int16_t, uint64_t, (uint64_t), (int16_t))                          \
    X(U16, uint16_t, uint64_t, (uint64_t), (uint16_t))                        \
    X(U32, uint32_t, uint64_t, (uint64_t), (uint32_t))                        \
    X(U64, uint64_t, uint64_t, (uint64_t), (uint64_t))

/* Scans w columns of n rows, rows stride elements apart, from the last row
 * back when rev; excl: each output is the sum of the rows before it. */
typedef void (*s_scan_fn)(int64_t n, int64_t stride, int64_t w, void *y, const void *x, bool excl,
                          bool rev);

#define S_SCAN(D, T, A, LOAD, STORE)                                          \
    static void s_scan_##D(int64_t n, int64_t stride, int64_t w, void *yv, const void *xv, \
                           bool excl, bool rev)                               \
    {                                                                         \
        A acc[S_SCAN_W] = {0};                                                \
        int64_t r = rev ? (n - 1) * stride : 0;                               \
        const int64_t dr = rev ? -stride : stride;                            \
        for (int64_t j = 0; j < n; j++, r += dr) {                            \
            T *restrict y = (T *)yv + r;                                      \
            const T *restrict x = (const T *)xv + r;                          \
            if (excl) {                                                       \
                for (int64_t c = 0; c < w; c++) {                             \
                    const A v = LOAD(x[c]);                                   \
                    y[c] = STORE(acc[c]);                                     \
                    acc[c] += v;                                              \
                }                                                             \
            } else {                                                          \
                for (int64_t c = 0; c < w; c++) {                             \
                    acc[c] += LOAD(x[c]);                                     \
                    y[c] = STORE(acc[c]);                                     \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
S_SCAN_DTYPES(S_SCAN)

#define S_SCAN_ENTRY(D, T, A, LOAD, STORE) [GX_##D] = s_scan_##D,
static const s_scan_fn s_scan[GX_DTYPE_COUNT] = {S_SCAN_DTYPES(S_SCAN_ENTRY)};

/* Work units: (outer index, block of S_SCAN_W columns of the inner dims). */
void gx_cpu_CUMSUM(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0], *a = &k->in[1];
    int64_t axis = a->dtype == GX_I32 ? *(const int32_t *)a->data : *(const int64_t *)a->data;
    int ax;
    gx_axis_norm(axis, x->ndim, &ax);
    const int64_t n = x->shape[ax], outer = s_prod(ax, x->shape);
    const int64_t inner = s_prod(x->ndim - ax - 1, x->shape + ax + 1);
    const int64_t blocks = (inner + S_SCAN_W - 1) / S_SCAN_W;
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    const bool excl = k->attr[GX_CUMSUM_EXCLUSIVE].i != 0, rev = k->attr[GX_CUMSUM_REVERSE].i != 0;
    int64_t lo, hi;
    gx_cpu_share(k, outer * blocks, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t c0 = u % blocks * S_SCAN_W, w = inner - c0 < S_SCAN_W ? inner - c0 : S_SCAN_W;
        int64_t off = (u / blocks * n * inner + c0) * es;
        s_scan[x->dtype](n, inner, w, (char *)y->data + off, (const char *)x->data + off, excl,
                         rev);
    }
}

/* ---- Trilu ---- */

/* Rows of the last two dims are the work units: each copies its kept
 * columns and zeroes the others (all-zero bits are 0 in every dtype). */
void gx_cpu_TRILU(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t m = x->shape[x->ndim - 1], nr = x->shape[x->ndim - 2];
    if (y->numel == 0)
        return;
    const bool upper = k->attr[GX_TRILU_UPPER].i != 0;
    int64_t kd = k->n_in > 1 && k->in[1].ndim >= 0 ? *(const int64_t *)k->in[1].data : 0;
    /* beyond these the result no longer changes; i + kd cannot overflow */
    kd = kd < -nr - 1 ? -nr - 1 : kd > m + 1 ? m + 1 : kd;
    const size_t es = gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel / m, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i = r % nr, c0, c1; /* keep columns [c0, c1) */
        if (upper) {
            c0 = i + kd < 0 ? 0 : i + kd > m ? m : i + kd;
            c1 = m;
        } else {
            c0 = 0;
            c1 = i + kd + 1 < 0 ? 0 : i + kd + 1 > m ? m : i + kd + 1;
        }
        char *yr = (char *)y->data + (size_t)(r * m) * es;
        const char *xr = (const char *)x->data + (size_t)(r * m) * es;
        memset(yr, 0, (size_t)c0 * es);
        memcpy(yr + (size_t)c0 * es, xr + (size_t)c0 * es, (size_t)(c1 - c0) * es);
        memset(yr + (size_t)c1 * es, 0, (size_t)(m - c1) * es);
    }
}

/* ---- OneHot ---- */

/* Index i of a numeric tensor as a class in [0, depth), or -1 when it
 * names none: floats truncate toward zero, -depth..-1 count from the end. */
typedef int64_t (*s_index_fn)(const void *x, int64_t i, int64_t depth);

static inline int64_t s_class(int64_t t, int64_t depth)
{
    if (t < 0)
        t += depth;
    return t >= 0 && t < depth ? t : -1;
}

#define S_INDEX_FLOAT(D, T, LOAD)                                             \
    static int64_t s_index_##D(const void *x, int64_t i, int64_t depth)      \
    {                                                                         \
        const double v = LOAD(((const T *)x)[i]);                             \
        if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0))      \
            return -1;                                                        \
        return s_class((int64_t)v, depth);                                    \
    }
#define S_INDEX_INT(D, T)                                                     \
    static int64_t s_index_##D(const void *x, int64_t i, int64_t depth)      \
    {                                                                         \
        return s_class(((const T *)x)[i], depth);                             \
    }
S_INDEX_FLOAT(F32, float, S_ID)
S_INDEX_FLOAT(F64, double, S_ID)
S_INDEX_FLOAT(F16, uint16_t, gx_f16_to_f32)
S_INDEX_FLOAT(BF16, uint16_t, gx_bf16_to_f32)
S_INDEX_INT(I8, int8_t)
S_INDEX_INT(I16, int16_t)
S_INDEX_INT(I32, int32_t)
S_INDEX_INT(I64, int64_t)
S_INDEX_INT(U8, uint8_t)
S_INDEX_INT(U16, uint16_t)
S_INDEX_INT(U32, uint32_t)

static int64_t s_index_U64(const void *x, int64_t i, int64_t depth)
{
    const uint64_t v = ((const uint64_t *)x)[i];
    return v <= INT64_MAX ? s_class((int64_t)v, depth) : -1;
}

static const s_index_fn s_index[GX_DTYPE_COUNT] = {
    [GX_F32] = s_index_F32, [GX_F64] = s_index_F64, [GX_F16] = s_index_F16,
    [GX_BF16] = s_index_BF16, [GX_I8] = s_index_I8, [GX_I16] = s_index_I16,
    [GX_I32] = s_index_I32, [GX_I64] = s_index_I64, [GX_U8] = s_index_U8,
    [GX_U16] = s_index_U16, [GX_U32] = s_index_U32, [GX_U64] = s_index_U64,
};

/* The output is [outer, depth, inner] around the inserted axis; a share is
 * a range of its elements, walked with (o, d, i) counters. */
void gx_cpu_ONE_HOT(const gx_kargs *k)
{
    const gx_view *ind = &k->in[0], *val = &k->in[2], *y = &k->out[0];
    int ax;
    gx_axis_norm(k->attr[GX_ONE_HOT_AXIS].i, y->ndim, &ax);
    const int64_t depth = y->shape[ax], inner = s_prod(y->ndim - ax - 1, y->shape + ax + 1);
    const size_t es = gx_dtype_size(y->dtype);
    const uint64_t off = s_bits(val->data, es, 0), on = s_bits(val->data, es, 1);
    const s_index_fn index = s_index[ind->dtype];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_ALIGN, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t i = lo % inner, d = lo / inner % depth, o = lo / inner / depth;
    for (int64_t e = lo; e < hi; e++) {
        s_put_bits(y->data, es, e, index(ind->data, o * inner + i, depth) == d ? on : off);
        if (++i == inner) {
            i = 0;
            if (++d == depth) {
                d = 0;
                o++;
            }
        }
    }
}

/* ---- Range ---- */

/* y[j] = start + (lo + j) * delta for this share: floats in double,
 * integers in uint64_t, where the products wrap back into range exactly. */
typedef void (*s_range_fn)(int64_t lo, int64_t hi, void *y, const void *start, const void *delta);

#define S_RANGE_FLOAT(D, T, LOAD, STORE)                                      \
    static void s_range_##D(int64_t lo, int64_t hi, void *yv, const void *s, const void *d) \
    {                                                                         \
        const double s0 = LOAD(*(const T *)s), d0 = LOAD(*(const T *)d);      \
        T *restrict y = yv;                                                   \
        for (int64_t j = lo; j < hi; j++)                                     \
            y[j] = STORE(s0 + (double)j * d0);                                \
    }
#define S_RANGE_INT(D, T)                                                     \
    static void s_range_##D(int64_t lo, int64_t hi, void *yv, const void *s, const void *d) \
    {                                                                         \
        const uint64_t s0 = (uint64_t)*(const T *)s, d0 = (uint64_t)*(const T *)d; \
        T *restrict y = yv;                                                   \
        for (int64_t j = lo; j < hi; j++)                                     \
            y[j] = (T)(s0 + (uint64_t)j * d0);                                \
    }
#define S_TO_F16(v) gx_f32_to_f16((float)(v))
#define S_TO_BF16(v) gx_f32_to_bf16((float)(v))
S_RANGE_FLOAT(F32, float, S_ID, (float))
S_RANGE_FLOAT(F64, double, S_ID, S_ID)
S_RANGE_FLOAT(F16, uint16_t, gx_f16_to_f32, S_TO_F16)
S_RANGE_FLOAT(BF16, uint16_t, gx_bf16_to_f32, S_TO_BF16)
S_RANGE_INT(I8, int8_t)
S_RANGE_INT(I16, int16_t)
S_RANGE_INT(I32, int32_t)
S_RANGE_INT(I64, int64_t)
S_RANGE_INT(U8, uint8_t)
S_RANGE_INT(U16, uint16_t)
S_RANGE_INT(U32, uint32_t)
S_RANGE_INT(U64, uint64_t)

static const s_range_fn s_range[GX_DTYPE_COUNT] = {
    [GX_F32] = s_range_F32, [GX_F64] = s_range_F64, [GX_F16] = s_range_F16,
    [GX_BF16] = s_range_BF16, [GX_I8] = s_range_I8, [GX_I16] = s_range_I16,
    [GX_I32] = s_range_I32, [GX_I64] = s_range_I64, [GX_U8] = s_range_U8,
    [GX_U16] = s_range_U16, [GX_U32] = s_range_U32, [GX_U64] = s_range_U64,
};

void gx_cpu_RANGE(const gx_kargs *k)
{
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].numel, S_ALIGN, &lo, &hi);
    if (lo < hi)
        s_range[k->out[0].dtype](lo, hi, k->out[0].data, k->in[0].data, k->in[2].data);
}

/* ---- EyeLike ---- */

/* The bits of 1 in each dtype. */
static const uint64_t s_one[GX_DTYPE_COUNT] = {
    [GX_F32] = 0x3f800000u, [GX_F16] = 0x3c00u, [GX_BF16] = 0x3f80u,
    [GX_F64] = 0x3ff0000000000000u, [GX_I64] = 1, [GX_I32] = 1, [GX_I8] = 1, [GX_U8] = 1,
    [GX_BOOL] = 1, [GX_I16] = 1, [GX_U16] = 1, [GX_U32] = 1, [GX_U64] = 1,
};

/* Rows are the work units: zeroed, then the 1 of column row + k if the
 * diagonal crosses the row. */
void gx_cpu_EYE_LIKE(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const int64_t m = y->shape[1], kd = k->attr[GX_EYE_LIKE_K].i;
    const size_t es = gx_dtype_size(y->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->shape[0], 1, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        memset((char *)y->data + (size_t)(i * m) * es, 0, (size_t)m * es);
        if (kd >= -i && kd < m - i) /* 0 <= i + kd < m, without overflow */
            s_put_bits(y->data, es, i * m + i + kd, s_one[y->dtype]);
    }
}

/* ---- NonZero ---- */

/* A share is a range of input elements: it counts the nonzeros before it
 * to find its first output column, then writes one column per nonzero. */
void gx_cpu_NONZERO(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const size_t es = gx_dtype_size(x->dtype);
    const uint64_t mask = gx_nonzero_bits(x->dtype);
    const int64_t nnz = y->shape[1];
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, S_ALIGN, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t col = 0;
    for (int64_t f = 0; f < lo; f++)
        col += (s_bits(x->data, es, f) & mask) != 0;
    const int nd = x->ndim;
    int64_t idx[GX_MAX_DIMS] = {0};
    int64_t rest = lo;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rest % x->shape[d];
        rest /= x->shape[d];
    }
    int64_t *py = y->data;
    for (int64_t f = lo; f < hi; f++) {
        if (s_bits(x->data, es, f) & mask) {
            for (int d = 0; d < nd; d++)
                py[d * nnz + col] = idx[d];
            if (nd == 0) /* a scalar reads as shape [1] */
                py[col] = 0;
            col++;
        }
        for (int d = nd - 1; d >= 0 && ++idx[d] == x->shape[d]; d--)
            idx[d] = 0;
    }
}

/* ---- Compress ---- */

/* Index of the first true entry of cond[0..len) at or after p (len if none). */
static int64_t s_next_true(const uint8_t *cond, int64_t len, int64_t p)
{
    while (p < len && !cond[p])
        p++;
    return p;
}

/* The output is [outer, nsel, inner] (without axis: [1, nsel, 1] over the
 * flattened input); its rows of inner elements are the work units, each
 * the copy of the input row at the matching true entry. */
void gx_cpu_COMPRESS(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *c = &k->in[1], *y = &k->out[0];
    int64_t outer = 1, len = x->numel, inner = 1, nsel = y->numel;
    if (k->attr[GX_COMPRESS_AXIS].set) {
        int ax;
        gx_axis_norm(k->attr[GX_COMPRESS_AXIS].i, x->ndim, &ax);
        outer = s_prod(ax, x->shape);
        len = x->shape[ax];
        inner = s_prod(x->ndim - ax - 1, x->shape + ax + 1);
        nsel = y->shape[ax];
    }
    const uint8_t *cond = c->data;
    const int64_t clen = c->shape[0];
    const size_t rowb = (size_t)inner * gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, outer * nsel, 1, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t o = lo / nsel, s = lo % nsel, p = s_next_true(cond, clen, 0);
    for (int64_t j = 0; j < s; j++)
        p = s_next_true(cond, clen, p + 1);
    for (int64_t r = lo; r < hi; r++) {
        memcpy((char *)y->data + (size_t)r * rowb, (const char *)x->data + (size_t)(o * len + p) * rowb,
               rowb);
        if (++s == nsel) {
            s = 0;
            o++;
            p = s_next_true(cond, clen, 0);
        } else {
            p = s_next_true(cond, clen, p + 1);
        }
    }
}
