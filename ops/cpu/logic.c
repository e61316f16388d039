/*
 * CPU kernels of the elementwise logic ops: comparisons (bool out), And Or
 * Xor Not, BitwiseAnd/Or/Xor/Not, BitShift, Where, IsNaN and IsInf. The broadcasting ones share
 * one driver that walks the output in runs (gx_nditer) and hands each run
 * to a row loop stamped out per dtype; a run's inputs each advance by 0 or
 * 1 element, and the row loops have a separate loop for the common cases so
 * that each one vectorises.
 */
#include <math.h>

#include "ops/cpu/cpu.h"

/* Share boundaries in elements: 64 elements of any dtype are whole cache
 * lines, so two threads never write the same line. */
#define S_ALIGN 64

#define S_ID(v) (v)
#define S_TRUTH(v) ((uint8_t)((v) != 0))

/* X(dtype, element type, type an element is compared as, how to read it):
 * f16/bf16 widen to float, bool bytes read as 0/1. */
#define S_DTYPES(X)                                                           \
    X(F32, float, float, S_ID)                                                \
    X(F16, uint16_t, float, gx_f16_to_f32)                                    \
    X(BF16, uint16_t, float, gx_bf16_to_f32)                                  \
    X(F64, double, double, S_ID)                                              \
    X(I64, int64_t, int64_t, S_ID)                                            \
    X(I32, int32_t, int32_t, S_ID)                                            \
    X(I8, int8_t, int8_t, S_ID)                                               \
    X(U8, uint8_t, uint8_t, S_ID)                                             \
    X(BOOL, uint8_t, uint8_t, S_TRUTH)                                        \
    X(I16, int16_t, int16_t, S_ID)                                            \
    X(U16, uint16_t, uint16_t, S_ID)                                          \
    X(U32, uint32_t, uint32_t, S_ID)                                          \
    X(U64, uint64_t, uint64_t, S_ID)

#define S_COUNT(D, T, C, LOAD) +1
_Static_assert(0 S_DTYPES(S_COUNT) == GX_DTYPE_COUNT - 1,
               "S_DTYPES lists every dtype but strings (Equal compares them apart)");

#define S_FLOAT_DTYPES(X)                                                     \
    X(F32, float, float, S_ID)                                                \
    X(F16, uint16_t, float, gx_f16_to_f32)                                    \
    X(BF16, uint16_t, float, gx_bf16_to_f32)                                  \
    X(F64, double, double, S_ID)

#define S_UINT_DTYPES(X)                                                      \
    X(U8, uint8_t, uint8_t, S_ID)                                             \
    X(U16, uint16_t, uint16_t, S_ID)                                          \
    X(U32, uint32_t, uint32_t, S_ID)                                          \
    X(U64, uint64_t, uint64_t, S_ID)

/* One run of a broadcasting op: n output elements at y, input i at x[i]
 * advancing by step[i] (0 or 1) elements. */
typedef void (*s_row)(int64_t n, void *y, const void *const *x, const int64_t *step);

/* Runs row over this thread's share of the output, the inputs broadcast. */
static void s_bcast(const gx_kargs *k, s_row row)
{
    const gx_view *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_ALIGN, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t strides[GX_NDITER_MAX_IN][GX_MAX_DIMS];
    const int64_t *sp[GX_NDITER_MAX_IN];
    int64_t es[GX_NDITER_MAX_IN];
    for (int i = 0; i < k->n_in; i++) {
        gx_bcast_strides(y->ndim, k->in[i].ndim, k->in[i].shape, strides[i]);
        sp[i] = strides[i];
        es[i] = (int64_t)gx_dtype_size(k->in[i].dtype);
    }
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, k->n_in, sp);
    gx_nditer_seek(&it, lo, hi);
    const int64_t ys = (int64_t)gx_dtype_size(y->dtype);
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        const void *x[GX_NDITER_MAX_IN];
        for (int i = 0; i < k->n_in; i++)
            x[i] = (const char *)k->in[i].data + r.off[i] * es[i];
        row(r.n, (char *)y->data + r.y * ys, x, it.step);
    }
}

/* A row loop NAME computing y[i] = EXPR of a and b, the inputs' elements
 * read as C through LOAD. */
#define S_BINARY_ROW(NAME, T, C, LOAD, TO, EXPR)                              \
    static void NAME(int64_t n, void *yv, const void *const *x, const int64_t *step) \
    {                                                                         \
        TO *restrict y = yv;                                                  \
        const T *restrict pa = x[0], *restrict pb = x[1];                     \
        if (step[0] == 1 && step[1] == 1) {                                   \
            for (int64_t i = 0; i < n; i++) {                                 \
                const C a = LOAD(pa[i]), b = LOAD(pb[i]);                     \
                y[i] = (EXPR);                                                \
            }                                                                 \
        } else if (step[0] == 1) {                                            \
            const C b = LOAD(pb[0]);                                          \
            for (int64_t i = 0; i < n; i++) {                                 \
                const C a = LOAD(pa[i]);                                      \
                y[i] = (EXPR);                                                \
            }                                                                 \
        } else if (step[1] == 1) {                                            \
            const C a = LOAD(pa[0]);                                          \
            for (int64_t i = 0; i < n; i++) {                                 \
                const C b = LOAD(pb[i]);                                      \
                y[i] = (EXPR);                                                \
            }                                                                 \
        } else {                                                              \
            const C a = LOAD(pa[0]), b = LOAD(pb[0]);                         \
            for (int64_t i = 0; i < n; i++)                                   \
                y[i] = (EXPR);                                                \
        }                                                                     \
    }

/* ---- comparisons: every dtype, bool out ---- */

enum { S_EQ, S_LT, S_GT, S_LE, S_GE, S_NCMP };

#define S_CMP_ROWS(D, T, C, LOAD)                                             \
    S_BINARY_ROW(s_eq_##D, T, C, LOAD, uint8_t, a == b)                       \
    S_BINARY_ROW(s_lt_##D, T, C, LOAD, uint8_t, a < b)                        \
    S_BINARY_ROW(s_gt_##D, T, C, LOAD, uint8_t, a > b)                        \
    S_BINARY_ROW(s_le_##D, T, C, LOAD, uint8_t, a <= b)                       \
    S_BINARY_ROW(s_ge_##D, T, C, LOAD, uint8_t, a >= b)
S_DTYPES(S_CMP_ROWS)

#define S_CMP_ENTRY(D, T, C, LOAD)                                            \
    [GX_##D] = {[S_EQ] = s_eq_##D, [S_LT] = s_lt_##D, [S_GT] = s_gt_##D,      \
                [S_LE] = s_le_##D, [S_GE] = s_ge_##D},
typedef const gx_strrec *s_str;
S_BINARY_ROW(s_eq_STRING, s_str, s_str, S_ID, uint8_t, gx_str_eq(a, b))
/* strings: Equal only (its schema's GX_OPF_STRINGS; the others refuse them) */
static const s_row s_cmp[GX_DTYPE_COUNT][S_NCMP] = {S_DTYPES(S_CMP_ENTRY)[GX_STRING] = {
                                                        [S_EQ] = s_eq_STRING}};

void gx_cpu_EQUAL(const gx_kargs *k) { s_bcast(k, s_cmp[k->in[0].dtype][S_EQ]); }
void gx_cpu_LESS(const gx_kargs *k) { s_bcast(k, s_cmp[k->in[0].dtype][S_LT]); }
void gx_cpu_GREATER(const gx_kargs *k) { s_bcast(k, s_cmp[k->in[0].dtype][S_GT]); }
void gx_cpu_LESS_OR_EQUAL(const gx_kargs *k) { s_bcast(k, s_cmp[k->in[0].dtype][S_LE]); }
void gx_cpu_GREATER_OR_EQUAL(const gx_kargs *k) { s_bcast(k, s_cmp[k->in[0].dtype][S_GE]); }

/* ---- And, Or, Xor: bool; any nonzero byte counts as true ---- */

S_BINARY_ROW(s_and, uint8_t, uint8_t, S_TRUTH, uint8_t, a & b)
S_BINARY_ROW(s_or, uint8_t, uint8_t, S_TRUTH, uint8_t, a | b)
S_BINARY_ROW(s_xor, uint8_t, uint8_t, S_TRUTH, uint8_t, a ^ b)

void gx_cpu_AND(const gx_kargs *k) { s_bcast(k, s_and); }
void gx_cpu_OR(const gx_kargs *k) { s_bcast(k, s_or); }
void gx_cpu_XOR(const gx_kargs *k) { s_bcast(k, s_xor); }

/* ---- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot: integers, on the
 * bits, so one row per element size serves signed and unsigned ---- */

#define S_BITWISE_ROWS(BITS)                                                  \
    S_BINARY_ROW(s_band_##BITS, uint##BITS##_t, uint##BITS##_t, S_ID, uint##BITS##_t, a & b) \
    S_BINARY_ROW(s_bor_##BITS, uint##BITS##_t, uint##BITS##_t, S_ID, uint##BITS##_t, a | b) \
    S_BINARY_ROW(s_bxor_##BITS, uint##BITS##_t, uint##BITS##_t, S_ID, uint##BITS##_t, a ^ b)
S_BITWISE_ROWS(8)
S_BITWISE_ROWS(16)
S_BITWISE_ROWS(32)
S_BITWISE_ROWS(64)

/* Rows by element size (1, 2, 4, 8 bytes). */
static const s_row s_band[9] = {[1] = s_band_8, [2] = s_band_16, [4] = s_band_32, [8] = s_band_64};
static const s_row s_bor[9] = {[1] = s_bor_8, [2] = s_bor_16, [4] = s_bor_32, [8] = s_bor_64};
static const s_row s_bxor[9] = {[1] = s_bxor_8, [2] = s_bxor_16, [4] = s_bxor_32, [8] = s_bxor_64};

void gx_cpu_BITWISE_AND(const gx_kargs *k) { s_bcast(k, s_band[gx_dtype_size(k->out[0].dtype)]); }
void gx_cpu_BITWISE_OR(const gx_kargs *k) { s_bcast(k, s_bor[gx_dtype_size(k->out[0].dtype)]); }
void gx_cpu_BITWISE_XOR(const gx_kargs *k) { s_bcast(k, s_bxor[gx_dtype_size(k->out[0].dtype)]); }

#define S_BITWISE_NOT(BITS)                                                   \
    static void s_bnot_##BITS(int64_t n, void *restrict yv, const void *restrict xv) \
    {                                                                         \
        uint##BITS##_t *restrict y = yv;                                      \
        const uint##BITS##_t *restrict x = xv;                                \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = (uint##BITS##_t)~x[i];                                     \
    }
S_BITWISE_NOT(8)
S_BITWISE_NOT(16)
S_BITWISE_NOT(32)
S_BITWISE_NOT(64)

void gx_cpu_BITWISE_NOT(const gx_kargs *k)
{
    typedef void (*row_fn)(int64_t n, void *restrict y, const void *restrict x);
    static const row_fn rows[9] = {[1] = s_bnot_8, [2] = s_bnot_16, [4] = s_bnot_32,
                                   [8] = s_bnot_64};
    const int64_t es = (int64_t)gx_dtype_size(k->out[0].dtype);
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].numel, S_ALIGN, &lo, &hi);
    if (lo < hi)
        rows[es](hi - lo, (char *)k->out[0].data + lo * es, (const char *)k->in[0].data + lo * es);
}

/* ---- BitShift: unsigned; a shift by the width or more gives 0 (C leaves
 * it undefined) ---- */

#define S_SHIFT_ROWS(D, T, C, LOAD)                                           \
    S_BINARY_ROW(s_shl_##D, T, C, LOAD, T, b >= 8 * sizeof(T) ? (T)0 : (T)(a << b)) \
    S_BINARY_ROW(s_shr_##D, T, C, LOAD, T, b >= 8 * sizeof(T) ? (T)0 : (T)(a >> b))
S_UINT_DTYPES(S_SHIFT_ROWS)

#define S_SHIFT_ENTRY(D, T, C, LOAD) [GX_##D] = {s_shl_##D, s_shr_##D},
static const s_row s_shift[GX_DTYPE_COUNT][2] = {S_UINT_DTYPES(S_SHIFT_ENTRY)};

void gx_cpu_BIT_SHIFT(const gx_kargs *k)
{
    bool right = k->attr[GX_BIT_SHIFT_DIRECTION].s[0] == 'R';
    s_bcast(k, s_shift[k->in[0].dtype][right]);
}

/* ---- Where: moves elements as bits, so one loop per element size ---- */

#define S_WHERE_ROW(BITS)                                                     \
    static void s_where_##BITS(int64_t n, void *yv, const void *const *x, const int64_t *step) \
    {                                                                         \
        uint##BITS##_t *restrict y = yv;                                      \
        const uint8_t *restrict c = x[0];                                     \
        const uint##BITS##_t *restrict a = x[1], *restrict b = x[2];          \
        if (step[0] == 1 && step[1] == 1 && step[2] == 1) {                   \
            for (int64_t i = 0; i < n; i++)                                   \
                y[i] = c[i] ? a[i] : b[i];                                    \
        } else {                                                              \
            const int64_t sc = step[0], sa = step[1], sb = step[2];           \
            for (int64_t i = 0; i < n; i++)                                   \
                y[i] = c[i * sc] ? a[i * sa] : b[i * sb];                     \
        }                                                                     \
    }
S_WHERE_ROW(8)
S_WHERE_ROW(16)
S_WHERE_ROW(32)
S_WHERE_ROW(64)

void gx_cpu_WHERE(const gx_kargs *k)
{
    static const s_row rows[9] = {[1] = s_where_8, [2] = s_where_16, [4] = s_where_32,
                                  [8] = s_where_64};
    s_bcast(k, rows[gx_dtype_size(k->out[0].dtype)]);
}

/* ---- Not, IsNaN, IsInf: one input, bool out of its shape ---- */

/* n elements of a test: y[i] for x[i]; pos/neg are IsInf's attributes. */
typedef void (*s_test)(int64_t n, uint8_t *restrict y, const void *x, bool pos, bool neg);

#define S_FLOAT_TESTS(D, T, C, LOAD)                                          \
    static void s_isnan_##D(int64_t n, uint8_t *restrict y, const void *xv, bool pos, bool neg) \
    {                                                                         \
        const T *restrict x = xv;                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C v = LOAD(x[i]);                                           \
            y[i] = v != v;                                                    \
        }                                                                     \
    }                                                                         \
    static void s_isinf_##D(int64_t n, uint8_t *restrict y, const void *xv, bool pos, bool neg) \
    {                                                                         \
        const T *restrict x = xv;                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C v = LOAD(x[i]);                                           \
            y[i] = (pos && v == (C)INFINITY) || (neg && v == -(C)INFINITY);   \
        }                                                                     \
    }
S_FLOAT_DTYPES(S_FLOAT_TESTS)

static void s_not(int64_t n, uint8_t *restrict y, const void *xv, bool pos, bool neg)
{
    const uint8_t *restrict x = xv;
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] == 0;
}

/* Runs test over this thread's share of the elements. */
static void s_unary(const gx_kargs *k, s_test test, bool pos, bool neg)
{
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].numel, S_ALIGN, &lo, &hi);
    if (lo < hi)
        test(hi - lo, (uint8_t *)k->out[0].data + lo,
             (const char *)k->in[0].data + lo * (int64_t)gx_dtype_size(k->in[0].dtype), pos, neg);
}

#define S_ISNAN_ENTRY(D, T, C, LOAD) [GX_##D] = s_isnan_##D,
#define S_ISINF_ENTRY(D, T, C, LOAD) [GX_##D] = s_isinf_##D,
static const s_test s_isnan[GX_DTYPE_COUNT] = {S_FLOAT_DTYPES(S_ISNAN_ENTRY)};
static const s_test s_isinf[GX_DTYPE_COUNT] = {S_FLOAT_DTYPES(S_ISINF_ENTRY)};

void gx_cpu_NOT(const gx_kargs *k) { s_unary(k, s_not, false, false); }
void gx_cpu_ISNAN(const gx_kargs *k) { s_unary(k, s_isnan[k->in[0].dtype], false, false); }

void gx_cpu_ISINF(const gx_kargs *k)
{
    s_unary(k, s_isinf[k->in[0].dtype], k->attr[GX_ISINF_DETECT_POSITIVE].i != 0,
            k->attr[GX_ISINF_DETECT_NEGATIVE].i != 0);
}
