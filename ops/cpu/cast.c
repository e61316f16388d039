/*
 * CPU kernel of Cast and CastLike: one loop per (source, destination) dtype
 * pair, stamped out from two lists. A source element is read as one of four
 * value classes (F: float, D: double, I: int64_t, U: uint64_t) and each
 * destination has a conversion from each class:
 *   - to bool: nonzero is true (NaN too);
 *   - float to integer: truncated toward zero and saturated to the target's
 *     range, NaN gives 0 (ONNX leaves these undefined; C makes them UB);
 *   - integer to integer: modulo 2^bits (two's complement), like numpy;
 *   - to float16/bfloat16: correctly rounded to nearest even, also from
 *     double and 64-bit integers (rounded to odd on the way through float,
 *     so the second rounding cannot land wrong).
 */
#include <math.h>

#include "ops/cpu/cpu.h"

/* Share boundaries in elements: whole cache lines for any dtype. */
#define S_ALIGN 64

typedef float s_F;
typedef double s_D;
typedef int64_t s_I;
typedef uint64_t s_U;

#define S_ID(v) (v)
#define S_TRUTH(v) ((uint64_t)((v) != 0))

/* X(dtype, element type, value class, how to read it as the class) */
#define S_SRC(X)                                                              \
    X(F32, float, F, S_ID)                                                    \
    X(F16, uint16_t, F, gx_f16_to_f32)                                        \
    X(BF16, uint16_t, F, gx_bf16_to_f32)                                      \
    X(F64, double, D, S_ID)                                                   \
    X(I64, int64_t, I, S_ID)                                                  \
    X(I32, int32_t, I, S_ID)                                                  \
    X(I8, int8_t, I, S_ID)                                                    \
    X(U8, uint8_t, U, S_ID)                                                   \
    X(BOOL, uint8_t, U, S_TRUTH)                                              \
    X(I16, int16_t, I, S_ID)                                                  \
    X(U16, uint16_t, U, S_ID)                                                 \
    X(U32, uint32_t, U, S_ID)                                                 \
    X(U64, uint64_t, U, S_ID)

/* X(..., dtype, element type) for every destination, the source's
 * arguments first. */
#define S_DST(X, ...)                                                         \
    X(__VA_ARGS__, F32, float)                                                \
    X(__VA_ARGS__, F16, uint16_t)                                             \
    X(__VA_ARGS__, BF16, uint16_t)                                            \
    X(__VA_ARGS__, F64, double)                                               \
    X(__VA_ARGS__, I64, int64_t)                                              \
    X(__VA_ARGS__, I32, int32_t)                                              \
    X(__VA_ARGS__, I8, int8_t)                                                \
    X(__VA_ARGS__, U8, uint8_t)                                               \
    X(__VA_ARGS__, BOOL, uint8_t)                                             \
    X(__VA_ARGS__, I16, int16_t)                                              \
    X(__VA_ARGS__, U16, uint16_t)                                             \
    X(__VA_ARGS__, U32, uint32_t)                                             \
    X(__VA_ARGS__, U64, uint64_t)

#define S_COUNT(D, T, CLS, LOAD) +1
_Static_assert(0 S_SRC(S_COUNT) == GX_DTYPE_COUNT, "S_SRC lists every dtype");

/* ---- rounding to odd into float32 ---- */

/* v rounded to float32 toward zero, with the last bit set when that was
 * inexact: a later round-to-nearest into a narrower float (f16, bf16) then
 * gives what rounding v directly would. */
static inline float s_f64_to_f32_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || v != v)
        return f;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    if (fabs((double)f) > fabs(v)) /* rounded away from zero: step back */
        b--;
    b |= 1;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline float s_u64_to_f32_odd(uint64_t u)
{
    if (u < (1u << 24))
        return (float)u;
    int drop = 40 - __builtin_clzll(u); /* bits below the 24 a float keeps */
    uint64_t m = (u >> drop) | ((u & ((1ull << drop) - 1)) != 0);
    return ldexpf((float)m, drop);
}

static inline float s_i64_to_f32_odd(int64_t v)
{
    return v < 0 ? -s_u64_to_f32_odd(-(uint64_t)v) : s_u64_to_f32_odd((uint64_t)v);
}

/* ---- conversions s_<class>_to_<dtype> ---- */

static inline float s_F_to_F32(float v) { return v; }
static inline float s_D_to_F32(double v) { return (float)v; }
static inline float s_I_to_F32(int64_t v) { return (float)v; }
static inline float s_U_to_F32(uint64_t v) { return (float)v; }

static inline double s_F_to_F64(float v) { return v; }
static inline double s_D_to_F64(double v) { return v; }
static inline double s_I_to_F64(int64_t v) { return (double)v; }
static inline double s_U_to_F64(uint64_t v) { return (double)v; }

#define S_HALF(D, FROM_F32)                                                   \
    static inline uint16_t s_F_to_##D(float v) { return FROM_F32(v); }        \
    static inline uint16_t s_D_to_##D(double v) { return FROM_F32(s_f64_to_f32_odd(v)); } \
    static inline uint16_t s_I_to_##D(int64_t v) { return FROM_F32(s_i64_to_f32_odd(v)); } \
    static inline uint16_t s_U_to_##D(uint64_t v) { return FROM_F32(s_u64_to_f32_odd(v)); }
S_HALF(F16, gx_f32_to_f16)
S_HALF(BF16, gx_f32_to_bf16)

/* The bounds compare as doubles: MIN and MAX are exact or round up to a
 * power of two (2^63, 2^64) that no in-range value reaches. */
#define S_INT(D, T, MIN, MAX)                                                 \
    static inline T s_D_to_##D(double v)                                      \
    {                                                                         \
        return v != v ? 0 : v <= (double)(MIN) ? (MIN) : v >= (double)(MAX) ? (MAX) : (T)v; \
    }                                                                         \
    static inline T s_F_to_##D(float v) { return s_D_to_##D(v); }             \
    static inline T s_I_to_##D(int64_t v) { return (T)v; }                    \
    static inline T s_U_to_##D(uint64_t v) { return (T)v; }
S_INT(I8, int8_t, INT8_MIN, INT8_MAX)
S_INT(I16, int16_t, INT16_MIN, INT16_MAX)
S_INT(I32, int32_t, INT32_MIN, INT32_MAX)
S_INT(I64, int64_t, INT64_MIN, INT64_MAX)
S_INT(U8, uint8_t, 0, UINT8_MAX)
S_INT(U16, uint16_t, 0, UINT16_MAX)
S_INT(U32, uint32_t, 0, UINT32_MAX)
S_INT(U64, uint64_t, 0, UINT64_MAX)

static inline uint8_t s_F_to_BOOL(float v) { return v != 0; }
static inline uint8_t s_D_to_BOOL(double v) { return v != 0; }
static inline uint8_t s_I_to_BOOL(int64_t v) { return v != 0; }
static inline uint8_t s_U_to_BOOL(uint64_t v) { return v != 0; }

/* ---- the loops and their table ---- */

typedef void (*s_cast_fn)(int64_t n, void *y, const void *x);

#define S_CAST_LOOP(S, TS, CLS, LOAD, D, TD)                                  \
    static void s_cast_##S##_##D(int64_t n, void *yv, const void *xv)         \
    {                                                                         \
        TD *restrict y = yv;                                                  \
        const TS *restrict x = xv;                                            \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = s_##CLS##_to_##D((s_##CLS)LOAD(x[i]));                     \
    }
#define S_CAST_LOOPS(S, TS, CLS, LOAD) S_DST(S_CAST_LOOP, S, TS, CLS, LOAD)
S_SRC(S_CAST_LOOPS)

#define S_CAST_ENTRY(S, TS, CLS, LOAD, D, TD) [GX_##D] = s_cast_##S##_##D,
#define S_CAST_ROW(S, TS, CLS, LOAD) [GX_##S] = {S_DST(S_CAST_ENTRY, S, TS, CLS, LOAD)},
static const s_cast_fn s_cast[GX_DTYPE_COUNT][GX_DTYPE_COUNT] = {S_SRC(S_CAST_ROW)};

/* Converts this thread's share of input 0 into the output's dtype. */
static void s_cast_share(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_ALIGN, &lo, &hi);
    if (lo < hi)
        s_cast[x->dtype][y->dtype](hi - lo,
                                   (char *)y->data + lo * (int64_t)gx_dtype_size(y->dtype),
                                   (const char *)x->data + lo * (int64_t)gx_dtype_size(x->dtype));
}

void gx_cpu_CAST(const gx_kargs *k) { s_cast_share(k); }
void gx_cpu_CAST_LIKE(const gx_kargs *k) { s_cast_share(k); }
