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
 * To and from strings (s_cast_strings, docs/strings.md) as numpy's astype,
 * which ONNX's reference uses:
 *   - a float becomes the fewest digits that read back to the same value
 *     in its own dtype, positional for 1e-4 <= |v| < 1e16 ("0.5", "3.0"),
 *     else scientific ("1e-05", "1.5e+16"); "nan", "inf", "-inf";
 *   - an integer its decimal digits; a bool "True" or "False";
 *   - a string becomes a float as strtod reads it (plain or scientific,
 *     "INF", "+INF", "-INF", "NaN" in any case; surrounding spaces
 *     allowed), NaN when it is no number; an integer from its leading
 *     decimal integer, or the number it spells truncated toward zero
 *     ("100.5" gives 100) and saturated, 0 when it is no number; a bool
 *     true for "true" (any case) or a nonzero number.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

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
_Static_assert(0 S_SRC(S_COUNT) == GX_DTYPE_COUNT - 1,
               "S_SRC lists every dtype but strings (s_cast_strings)");

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

/* ---- to and from strings ---- */

/* Does text read back as v in dtype dt (the bits of v's dtype)? */
static bool s_reads_back(const char *text, gx_dtype dt, double v)
{
    switch (dt) {
    case GX_F32:
        return strtof(text, NULL) == (float)v;
    case GX_F16:
        return gx_f32_to_f16(strtof(text, NULL)) == gx_f32_to_f16((float)v);
    case GX_BF16:
        return gx_f32_to_bf16(strtof(text, NULL)) == gx_f32_to_bf16((float)v);
    case GX_F64: case GX_I64: case GX_I32: case GX_I8: case GX_U8: case GX_BOOL: case GX_I16:
    case GX_U16: case GX_U32: case GX_U64: case GX_STRING: case GX_DTYPE_COUNT:
        break;
    }
    return strtod(text, NULL) == v;
}

/* v (a value of float dtype dt) as numpy prints it, into buf (64 bytes);
 * returns the length. */
static int s_format_float(double v, gx_dtype dt, char *buf)
{
    if (v != v)
        return snprintf(buf, 64, "nan");
    if (isinf(v))
        return snprintf(buf, 64, v < 0 ? "-inf" : "inf");
    if (v == 0)
        return snprintf(buf, 64, signbit(v) ? "-0.0" : "0.0");
    /* the fewest significant digits that read back */
    char sci[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, v);
        if (s_reads_back(sci, dt, v))
            break;
    }
    snprintf(sci, sizeof sci, "%.*e", p - 1, v);
    /* sci: [-]d[.ddd]e[+-]xx */
    const bool neg = sci[0] == '-';
    char digits[24];
    int nd = 0;
    const char *q = sci + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.')
            digits[nd++] = *q;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    const int e = atoi(q + 1);
    int n = 0;
    if (neg)
        buf[n++] = '-';
    if (e >= -4 && e < 16) { /* positional */
        if (e < 0) {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -e - 1; i++)
                buf[n++] = '0';
            for (int i = 0; i < nd; i++)
                buf[n++] = digits[i];
        } else {
            for (int i = 0; i <= e; i++)
                buf[n++] = i < nd ? digits[i] : '0';
            buf[n++] = '.';
            if (nd > e + 1)
                for (int i = e + 1; i < nd; i++)
                    buf[n++] = digits[i];
            else
                buf[n++] = '0';
        }
        buf[n] = '\0';
        return n;
    }
    buf[n++] = digits[0];
    if (nd > 1) {
        buf[n++] = '.';
        for (int i = 1; i < nd; i++)
            buf[n++] = digits[i];
    }
    return n + snprintf(buf + n, 64 - (size_t)n, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

/* Element i of x (not a string) as text into buf (64 bytes); its length. */
static int s_format(const gx_view *x, int64_t i, char *buf)
{
    const void *p = x->data;
    switch (x->dtype) {
    case GX_F32: return s_format_float(((const float *)p)[i], GX_F32, buf);
    case GX_F16: return s_format_float(gx_f16_to_f32(((const uint16_t *)p)[i]), GX_F16, buf);
    case GX_BF16: return s_format_float(gx_bf16_to_f32(((const uint16_t *)p)[i]), GX_BF16, buf);
    case GX_F64: return s_format_float(((const double *)p)[i], GX_F64, buf);
    case GX_I64: return snprintf(buf, 64, "%lld", (long long)((const int64_t *)p)[i]);
    case GX_I32: return snprintf(buf, 64, "%d", ((const int32_t *)p)[i]);
    case GX_I16: return snprintf(buf, 64, "%d", ((const int16_t *)p)[i]);
    case GX_I8: return snprintf(buf, 64, "%d", ((const int8_t *)p)[i]);
    case GX_U8: return snprintf(buf, 64, "%u", ((const uint8_t *)p)[i]);
    case GX_U16: return snprintf(buf, 64, "%u", ((const uint16_t *)p)[i]);
    case GX_U32: return snprintf(buf, 64, "%u", ((const uint32_t *)p)[i]);
    case GX_U64: return snprintf(buf, 64, "%llu", (unsigned long long)((const uint64_t *)p)[i]);
    case GX_BOOL: return snprintf(buf, 64, "%s", ((const uint8_t *)p)[i] ? "True" : "False");
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    buf[0] = '\0';
    return 0;
}

/* A string read as a number: as a double (NaN when it is none), and as an
 * int64 when it starts with a decimal integer that is all of it (*exact). */
static double s_parse(const gx_strrec *r, int64_t *iv, bool *exact)
{
    const char *t = gx_str_bytes(r);
    char *end;
    *exact = false;
    errno = 0;
    long long ll = strtoll(t, &end, 10);
    if (end != t && errno == 0) {
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (*end == '\0') {
            *iv = ll;
            *exact = true;
            return (double)ll;
        }
    }
    double d = strtod(t, &end);
    return end == t ? NAN : d;
}

/* Writes element i of y (not a string) from string r. */
static void s_store_parsed(const gx_view *y, int64_t i, const gx_strrec *r)
{
    int64_t iv = 0;
    bool exact;
    const double d = s_parse(r, &iv, &exact);
    void *p = y->data;
    switch (y->dtype) {
    case GX_F32: { /* read as float32 at once: no double rounding */
        char *end;
        float f = strtof(gx_str_bytes(r), &end);
        ((float *)p)[i] = end == gx_str_bytes(r) ? NAN : f;
        return;
    }
    case GX_F16: ((uint16_t *)p)[i] = s_D_to_F16(d); return;
    case GX_BF16: ((uint16_t *)p)[i] = s_D_to_BF16(d); return;
    case GX_F64: ((double *)p)[i] = d; return;
    case GX_I64: ((int64_t *)p)[i] = exact ? iv : s_D_to_I64(d); return;
    case GX_I32: ((int32_t *)p)[i] = exact ? s_I_to_I32(iv) : s_D_to_I32(d); return;
    case GX_I16: ((int16_t *)p)[i] = exact ? s_I_to_I16(iv) : s_D_to_I16(d); return;
    case GX_I8: ((int8_t *)p)[i] = exact ? s_I_to_I8(iv) : s_D_to_I8(d); return;
    case GX_U8: ((uint8_t *)p)[i] = exact ? s_I_to_U8(iv) : s_D_to_U8(d); return;
    case GX_U16: ((uint16_t *)p)[i] = exact ? s_I_to_U16(iv) : s_D_to_U16(d); return;
    case GX_U32: ((uint32_t *)p)[i] = exact ? s_I_to_U32(iv) : s_D_to_U32(d); return;
    case GX_U64: ((uint64_t *)p)[i] = exact ? s_I_to_U64(iv) : s_D_to_U64(d); return;
    case GX_BOOL:
        ((uint8_t *)p)[i] = strcasecmp(gx_str_bytes(r), "true") == 0 || (d == d && d != 0);
        return;
    case GX_STRING:
    case GX_DTYPE_COUNT:
        return;
    }
}

/* A cast from or to strings over this thread's share. */
static void s_cast_strings(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_ALIGN, &lo, &hi);
    const gx_strrec **ys = y->data;
    const gx_strrec *const *xs = x->data;
    for (int64_t i = lo; i < hi; i++) {
        if (x->dtype == GX_STRING && y->dtype == GX_STRING) {
            ys[i] = xs[i]; /* the same string: a handle copy */
        } else if (x->dtype == GX_STRING) {
            s_store_parsed(y, i, xs[i]);
        } else {
            char buf[64];
            int n = s_format(x, i, buf);
            ys[i] = gx_strheap_add(k->strs, buf, (size_t)n);
        }
    }
}

static void s_cast_any(const gx_kargs *k)
{
    if (k->in[0].dtype == GX_STRING || k->out[0].dtype == GX_STRING)
        s_cast_strings(k);
    else
        s_cast_share(k);
}

void gx_cpu_CAST(const gx_kargs *k) { s_cast_any(k); }
void gx_cpu_CAST_LIKE(const gx_kargs *k) { s_cast_any(k); }

/* RoundToFloat16 (gexec's own, ops/schema_elementwise.c): float32 rounded
 * to float16's precision, kept in float32; what a Cast to float16 and back
 * gives, element for element (gx_f32_round_f16), in one pass that
 * vectorizes. */
GX_CPU_CLONES static void s_round_f16_row(int64_t n, float *restrict y, const float *restrict x)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = gx_f32_round_f16(x[i]);
}

void gx_cpu_ROUND_F16(const gx_kargs *k)
{
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].numel, GX_CPU_LINE, &lo, &hi);
    if (lo < hi)
        s_round_f16_row(hi - lo, (float *)k->out[0].data + lo, (const float *)k->in[0].data + lo);
}
