/*
 * Elementwise CPU kernels of the math family, every dtype their schemas
 * accept. Each op is one expression per class of dtypes (float, signed and
 * unsigned integer); the S_ROW* macros stamp it into row loops per dtype,
 * simple enough for gcc to vectorise, and the drivers split the output's
 * elements across threads and feed the rows (broadcasting through
 * gx_nditer). float16 and bfloat16 are computed in float32; float32 uses
 * the branch-free functions of vmath.h, float64 libm. Integer arithmetic
 * wraps (it is done in unsigned types, where overflow is defined) and
 * integer division by 0 gives 0, so no input can trap.
 */
#include <math.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/vmath.h"

/* ---- dtype classes ---- */

#define S_ID(v) (v)

/* X(dtype, storage type, compute type, unsigned type for wrapping
 * arithmetic, load, store, lowest, highest, ...), one row per dtype. */
#define S_FLOATS(X, ...)                                                      \
    X(F32, float, float, uint32_t, S_ID, S_ID, -INFINITY, INFINITY, __VA_ARGS__) \
    X(F64, double, double, uint64_t, S_ID, S_ID, -INFINITY, INFINITY, __VA_ARGS__) \
    X(F16, uint16_t, float, uint32_t, gx_f16_to_f32, gx_f32_to_f16, -INFINITY, INFINITY, \
      __VA_ARGS__)                                                            \
    X(BF16, uint16_t, float, uint32_t, gx_bf16_to_f32, gx_f32_to_bf16, -INFINITY, INFINITY, \
      __VA_ARGS__)
#define S_SINTS(X, ...)                                                       \
    X(I8, int8_t, int8_t, uint32_t, S_ID, S_ID, INT8_MIN, INT8_MAX, __VA_ARGS__) \
    X(I16, int16_t, int16_t, uint32_t, S_ID, S_ID, INT16_MIN, INT16_MAX, __VA_ARGS__) \
    X(I32, int32_t, int32_t, uint32_t, S_ID, S_ID, INT32_MIN, INT32_MAX, __VA_ARGS__) \
    X(I64, int64_t, int64_t, uint64_t, S_ID, S_ID, INT64_MIN, INT64_MAX, __VA_ARGS__)
#define S_UINTS(X, ...)                                                       \
    X(U8, uint8_t, uint8_t, uint32_t, S_ID, S_ID, 0, UINT8_MAX, __VA_ARGS__)  \
    X(U16, uint16_t, uint16_t, uint32_t, S_ID, S_ID, 0, UINT16_MAX, __VA_ARGS__) \
    X(U32, uint32_t, uint32_t, uint32_t, S_ID, S_ID, 0, UINT32_MAX, __VA_ARGS__) \
    X(U64, uint64_t, uint64_t, uint64_t, S_ID, S_ID, 0, UINT64_MAX, __VA_ARGS__)

/* f(v) by the compute type of v: float32 (vmath.h or libm's float
 * functions) or float64. */
#define S_F(f32, f64, v) _Generic((v), float: f32, double: f64)(v)

static inline double s_select_d(bool c, double a, double b)
{
    return c ? a : b;
}

/* c ? a : b that still vectorises when a or b is arithmetic (see vmath.h). */
#define S_SEL(c, a, b) _Generic((a), float: gx_v_select, double: s_select_d)(c, a, b)

static inline double s_sigmoid_d(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static inline double s_softplus_d(double v)
{
    return (v > 0 ? v : 0) + log1p(exp(-fabs(v)));
}

/* With ?: gcc would move HardSwish's multiplication into an arm. */
static inline float s_clamp01f(float t)
{
    return gx_v_select(t > 1.0f, 1.0f, gx_v_select(t < 0.0f, 0.0f, t));
}

static inline double s_clamp01d(double t)
{
    t = t < 0.0 ? 0.0 : t;
    return t > 1.0 ? 1.0 : t;
}

/* ---- row loops ---- */

/* The float rows are compiled for wider vectors too (GX_CPU_CLONES); the
 * others (integer, float16 and bfloat16 conversions) only for the
 * baseline. */
#define S_CLONES_F32 GX_CPU_CLONES
#define S_CLONES_F64 GX_CPU_CLONES
#define S_CLONES_F16
#define S_CLONES_BF16
#define S_CLONES_I8
#define S_CLONES_I16
#define S_CLONES_I32
#define S_CLONES_I64
#define S_CLONES_U8
#define S_CLONES_U16
#define S_CLONES_U32
#define S_CLONES_U64
#define S_CLONES_BOOL

/* What rows see besides their operands: the operands' dtypes (for Pow's
 * mixed dtypes), the op's float attributes, Clip's bounds (in the input's
 * storage type; NULL for none). */
typedef struct s_ctx {
    gx_dtype ta, tb;
    double p[2];
    const void *lo, *hi;
} s_ctx;

/* y[0..n) = f(a, b) for one run; a and/or b may be a single repeated value
 * (the vs / sv variants). */
typedef void (*s_row2)(int64_t n, void *restrict y, const void *restrict a,
                       const void *restrict b, const s_ctx *c);
/* y[0..n) = f(y, b), b advancing (yv) or one value (ys): the later inputs
 * of a variadic op. */
typedef void (*s_rowacc)(int64_t n, void *restrict y, const void *restrict b, const s_ctx *c);
/* y[0..n) = f(x); also Mean's final y /= count in place (x == NULL). */
typedef void (*s_row1)(int64_t n, void *restrict y, const void *restrict x, const s_ctx *c);

typedef struct s_rows2 {
    s_row2 vv, vs, sv;
    s_rowacc yv, ys; /* variadic ops only */
} s_rows2;

#define S_UNUSED __attribute__((unused))

/* The names an op's expression may use: ct, ut (compute and unsigned
 * type), p0, p1 (its attributes). */
#define S_ROW_NAMES(C, U)                                                     \
    typedef C ct S_UNUSED;                                                    \
    typedef U ut S_UNUSED;                                                    \
    const C p0 S_UNUSED = (C)c->p[0], p1 S_UNUSED = (C)c->p[1];

/* The three rows s_<OP>_<dtype>_{vv,vs,sv} of y = EXPR(x, z). */
#define S_ROWS2(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                      \
    S_CLONES_##D static void s_##OP##_##D##_vv(int64_t n, void *restrict yv, const void *restrict av, \
                                  const void *restrict bv, const s_ctx *c)    \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const T *restrict a = av, *restrict b = bv;                           \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C x = LD(a[i]), z S_UNUSED = LD(b[i]);                      \
            y[i] = ST(EXPR(x, z));                                            \
        }                                                                     \
    }                                                                         \
    S_CLONES_##D static void s_##OP##_##D##_vs(int64_t n, void *restrict yv, const void *restrict av, \
                                  const void *restrict bv, const s_ctx *c)    \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const T *restrict a = av;                                             \
        const C z S_UNUSED = LD(*(const T *)bv);                              \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C x = LD(a[i]);                                             \
            y[i] = ST(EXPR(x, z));                                            \
        }                                                                     \
    }                                                                         \
    S_CLONES_##D static void s_##OP##_##D##_sv(int64_t n, void *restrict yv, const void *restrict av, \
                                  const void *restrict bv, const s_ctx *c)    \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const T *restrict b = bv;                                             \
        const C x = LD(*(const T *)av);                                       \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C z S_UNUSED = LD(b[i]);                                    \
            y[i] = ST(EXPR(x, z));                                            \
        }                                                                     \
    }

/* S_ROWS2 plus the accumulating rows s_<OP>_<dtype>_{yv,ys} of a variadic
 * op. */
#define S_ROWS2ACC(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                   \
    S_ROWS2(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                          \
    S_CLONES_##D static void s_##OP##_##D##_yv(int64_t n, void *restrict yv, const void *restrict bv, \
                                  const s_ctx *c)                             \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const T *restrict b = bv;                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C x = LD(y[i]), z = LD(b[i]);                               \
            y[i] = ST(EXPR(x, z));                                            \
        }                                                                     \
    }                                                                         \
    S_CLONES_##D static void s_##OP##_##D##_ys(int64_t n, void *restrict yv, const void *restrict bv, \
                                  const s_ctx *c)                             \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const C z = LD(*(const T *)bv);                                       \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C x = LD(y[i]);                                             \
            y[i] = ST(EXPR(x, z));                                            \
        }                                                                     \
    }

#define S_ENTRY2(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                     \
    [GX_##D] = {s_##OP##_##D##_vv, s_##OP##_##D##_vs, s_##OP##_##D##_sv, NULL, NULL},
#define S_ENTRY2ACC(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                  \
    [GX_##D] = {s_##OP##_##D##_vv, s_##OP##_##D##_vs, s_##OP##_##D##_sv, s_##OP##_##D##_yv, \
                s_##OP##_##D##_ys},

/* The row s_<OP>_<dtype> of y = EXPR(v). */
#define S_ROW1(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR)                       \
    S_CLONES_##D static void s_##OP##_##D(int64_t n, void *restrict yv, const void *restrict xv, \
                             const s_ctx *c)                                  \
    {                                                                         \
        S_ROW_NAMES(C, U)                                                     \
        T *restrict y = yv;                                                   \
        const T *restrict x = xv;                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C v = LD(x[i]);                                             \
            y[i] = ST(EXPR(v));                                               \
        }                                                                     \
    }

/* S_ROW1 for sin, cos and tan: vmath.h's versions hold for |x| <=
 * GX_V_TRIG_MAX, so a second pass redoes the rest (rare) with libm. */
#define S_ROW1TRIG(D, T, C, U, LD, ST, LOW, HIGH, OP, EXPR, LIBM)             \
    S_ROW1(D, T, C, U, LD, ST, LOW, HIGH, OP##_FAST, EXPR)                    \
    S_CLONES_##D static void s_##OP##_##D(int64_t n, void *restrict yv, const void *restrict xv, \
                             const s_ctx *c)                                  \
    {                                                                         \
        s_##OP##_FAST_##D(n, yv, xv, c);                                      \
        T *restrict y = yv;                                                   \
        const T *restrict x = xv;                                             \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C v = LD(x[i]);                                             \
            if (!(fabs((double)v) <= GX_V_TRIG_MAX))                          \
                y[i] = ST(S_F(LIBM##f, LIBM, v));                             \
        }                                                                     \
    }

#define S_ENTRY1(D, T, C, U, LD, ST, LOW, HIGH, OP, ...) [GX_##D] = s_##OP##_##D,

/* ---- drivers ---- */

/* Elements per 64-byte cache line, the alignment of a thread's share so
 * that two threads never write the same line. */
static int64_t s_line(gx_dtype dt)
{
    return 64 / (int64_t)gx_dtype_size(dt);
}

/* Output elements [lo, hi) of y = f(a, b), a and b broadcast to y's
 * shape. Same-shape and scalar operands collapse into a single run; a row
 * broadcast ([2,3] + [3]) gives contiguous runs of the row length. */
static void s_binary_range(const gx_view *y, const gx_view *a, const gx_view *b,
                           const s_rows2 *rows, const s_ctx *c, int64_t lo, int64_t hi)
{
    int64_t sa[GX_MAX_DIMS], sb[GX_MAX_DIMS];
    gx_bcast_strides(y->ndim, a->ndim, a->shape, sa);
    gx_bcast_strides(y->ndim, b->ndim, b->shape, sb);
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 2, (const int64_t *const[]){sa, sb});
    const s_row2 row = it.step[0] && it.step[1] ? rows->vv
                       : it.step[0]             ? rows->vs
                       : it.step[1]             ? rows->sv
                                                : rows->vv; /* one element */
    const int64_t ea = (int64_t)gx_dtype_size(a->dtype), eb = (int64_t)gx_dtype_size(b->dtype);
    const int64_t ey = (int64_t)gx_dtype_size(y->dtype);
    gx_nditer_seek(&it, lo, hi);
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r))
        row(r.n, (char *)y->data + r.y * ey, (const char *)a->data + r.off[0] * ea,
            (const char *)b->data + r.off[1] * eb, c);
}

/* A binary op over this thread's share of the output. */
static void s_binary(const gx_kargs *k, const s_rows2 *rows, const s_ctx *c)
{
    const gx_view *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, s_line(y->dtype), &lo, &hi);
    if (lo < hi)
        s_binary_range(y, &k->in[0], &k->in[1], rows, c, lo, hi);
}

/* A variadic op over this thread's share: y = f(in0, in1), then y = f(y,
 * in_i) for the later inputs, then fin (Mean's division) if any. One input
 * is copied. */
static void s_variadic(const gx_kargs *k, const s_rows2 *rows, s_row1 fin, const s_ctx *c)
{
    const gx_view *y = &k->out[0];
    const int64_t ey = (int64_t)gx_dtype_size(y->dtype);
    char *py = y->data;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, s_line(y->dtype), &lo, &hi);
    if (lo >= hi)
        return;
    if (k->n_in == 1)
        memcpy(py + lo * ey, (const char *)k->in[0].data + lo * ey, (size_t)((hi - lo) * ey));
    else
        s_binary_range(y, &k->in[0], &k->in[1], rows, c, lo, hi);
    for (int i = 2; i < k->n_in; i++) {
        const gx_view *b = &k->in[i];
        int64_t sb[GX_MAX_DIMS];
        gx_bcast_strides(y->ndim, b->ndim, b->shape, sb);
        gx_nditer it;
        gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){sb});
        const s_rowacc row = it.step[0] ? rows->yv : rows->ys;
        gx_nditer_seek(&it, lo, hi);
        gx_nditer_run r;
        while (gx_nditer_next(&it, &r))
            row(r.n, py + r.y * ey, (const char *)b->data + r.off[0] * ey, c);
    }
    if (fin)
        fin(hi - lo, py + lo * ey, NULL, c);
}

/* A unary op over this thread's share: input and output have one shape,
 * so a share is one run. */
static void s_unary(const gx_kargs *k, s_row1 row, const s_ctx *c)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, s_line(y->dtype), &lo, &hi);
    if (lo < hi)
        row(hi - lo, (char *)y->data + lo * es, (const char *)x->data + lo * es, c);
}

/* ---- binary and variadic ops ---- */

#define S_ADD_F(x, z) ((x) + (z))
#define S_ADD_I(x, z) ((ct)((ut)(x) + (ut)(z)))
#define S_SUB_F(x, z) ((x) - (z))
#define S_SUB_I(x, z) ((ct)((ut)(x) - (ut)(z)))
#define S_MUL_F(x, z) ((x) * (z))
#define S_MUL_I(x, z) ((ct)((ut)(x) * (ut)(z)))
#define S_DIV_F(x, z) ((x) / (z))
/* truncating; INT_MIN / -1 wraps to INT_MIN */
#define S_DIV_S(x, z)                                                         \
    ((z) == 0 ? (ct)0 : (z) == (ct)-1 ? (ct)(0u - (ut)(x)) : (ct)((x) / (z)))
#define S_DIV_U(x, z) ((z) == 0 ? (ct)0 : (ct)((x) / (z)))
/* NaN in either operand gives NaN (numpy's minimum / maximum) */
#define S_MIN_F(x, z) ((x) != (x) ? (x) : (z) != (z) ? (z) : (z) < (x) ? (z) : (x))
#define S_MAX_F(x, z) ((x) != (x) ? (x) : (z) != (z) ? (z) : (z) > (x) ? (z) : (x))
#define S_MIN_I(x, z) ((z) < (x) ? (z) : (x))
#define S_MAX_I(x, z) ((z) > (x) ? (z) : (x))
/* Mod: C's remainder (fmod=1; x % -1 is 0, also for INT_MIN) and Python's
 * (fmod=0: moved into the divisor's sign) */
#define S_FMOD_F(x, z) _Generic((x), float: fmodf, double: fmod)(x, z)
#define S_REM_S(x, z) ((z) == 0 || (z) == (ct)-1 ? (ct)0 : (ct)((x) % (z)))
#define S_REM_U(x, z) ((z) == 0 ? (ct)0 : (ct)((x) % (z)))
#define S_PYMOD_S(x, z)                                                       \
    ({                                                                        \
        const ct r_ = S_REM_S(x, z);                                          \
        r_ != 0 && (r_ < 0) != ((z) < 0) ? (ct)((ut)r_ + (ut)(z)) : r_;       \
    })
#define S_PRELU_F(x, z) S_SEL((x) < 0, (z) * (x), (x))
#define S_PRELU_S(x, z) ((x) < 0 ? (ct)((ut)(z) * (ut)(x)) : (x))
#define S_PRELU_U(x, z) (x)

/* The rows of op OP for all dtypes: FE for floats, SE for signed, UE for
 * unsigned integers. */
#define S_ROWS_NUM(STAMP, OP, FE, SE, UE)                                     \
    S_FLOATS(STAMP, OP, FE)                                                   \
    S_SINTS(STAMP, OP, SE)                                                    \
    S_UINTS(STAMP, OP, UE)
#define S_TABLE_NUM(ENTRY, OP)                                                \
    S_FLOATS(ENTRY, OP, _) S_SINTS(ENTRY, OP, _) S_UINTS(ENTRY, OP, _)

S_ROWS_NUM(S_ROWS2ACC, ADD, S_ADD_F, S_ADD_I, S_ADD_I)
S_ROWS_NUM(S_ROWS2, SUB, S_SUB_F, S_SUB_I, S_SUB_I)
S_ROWS_NUM(S_ROWS2, MUL, S_MUL_F, S_MUL_I, S_MUL_I)
S_ROWS_NUM(S_ROWS2, DIV, S_DIV_F, S_DIV_S, S_DIV_U)
S_ROWS_NUM(S_ROWS2ACC, MIN, S_MIN_F, S_MIN_I, S_MIN_I)
S_ROWS_NUM(S_ROWS2ACC, MAX, S_MAX_F, S_MAX_I, S_MAX_I)
S_ROWS_NUM(S_ROWS2, FMOD, S_FMOD_F, S_REM_S, S_REM_U)
S_SINTS(S_ROWS2, PYMOD, S_PYMOD_S)
S_UINTS(S_ROWS2, PYMOD, S_REM_U)
S_ROWS_NUM(S_ROWS2, PRELU, S_PRELU_F, S_PRELU_S, S_PRELU_U)

static const s_rows2 s_add[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2ACC, ADD)};
static const s_rows2 s_sub[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2, SUB)};
static const s_rows2 s_mul[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2, MUL)};
static const s_rows2 s_div[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2, DIV)};
static const s_rows2 s_min[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2ACC, MIN)};
static const s_rows2 s_max[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2ACC, MAX)};
static const s_rows2 s_fmod[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2, FMOD)};
static const s_rows2 s_pymod[GX_DTYPE_COUNT] = {S_SINTS(S_ENTRY2, PYMOD, _)
                                                    S_UINTS(S_ENTRY2, PYMOD, _)};
static const s_rows2 s_prelu[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY2, PRELU)};

/* Mean's final step, y /= p0 (the input count), in place. */
#define S_ROWMEAN(D, T, C, U, LD, ST, LOW, HIGH, ...)                         \
    static void s_MEAN_##D(int64_t n, void *restrict yv, const void *restrict xv, \
                           const s_ctx *c)                                    \
    {                                                                         \
        T *restrict y = yv;                                                   \
        const C count = (C)c->p[0];                                           \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = ST(LD(y[i]) / count);                                      \
    }
S_FLOATS(S_ROWMEAN, _)
static const s_row1 s_mean[GX_DTYPE_COUNT] = {S_FLOATS(S_ENTRY1, MEAN, _)};

void gx_cpu_ADD(const gx_kargs *k) { s_binary(k, &s_add[k->in[0].dtype], &(s_ctx){0}); }
void gx_cpu_SUB(const gx_kargs *k) { s_binary(k, &s_sub[k->in[0].dtype], &(s_ctx){0}); }
void gx_cpu_MUL(const gx_kargs *k) { s_binary(k, &s_mul[k->in[0].dtype], &(s_ctx){0}); }
void gx_cpu_DIV(const gx_kargs *k) { s_binary(k, &s_div[k->in[0].dtype], &(s_ctx){0}); }
void gx_cpu_PRELU(const gx_kargs *k) { s_binary(k, &s_prelu[k->in[0].dtype], &(s_ctx){0}); }

void gx_cpu_MOD(const gx_kargs *k)
{
    const s_rows2 *t = k->attr[GX_MOD_FMOD].i ? s_fmod : s_pymod;
    s_binary(k, &t[k->in[0].dtype], &(s_ctx){0});
}

void gx_cpu_MIN(const gx_kargs *k) { s_variadic(k, &s_min[k->in[0].dtype], NULL, &(s_ctx){0}); }
void gx_cpu_MAX(const gx_kargs *k) { s_variadic(k, &s_max[k->in[0].dtype], NULL, &(s_ctx){0}); }
void gx_cpu_SUM(const gx_kargs *k) { s_variadic(k, &s_add[k->in[0].dtype], NULL, &(s_ctx){0}); }

void gx_cpu_MEAN(const gx_kargs *k)
{
    const gx_dtype dt = k->in[0].dtype;
    s_variadic(k, &s_add[dt], s_mean[dt], &(s_ctx){.p = {k->n_in}});
}

/* ---- Pow ---- */

/* Element i of p (of dtype dt) as a double (ops/cpu/cpu.h); as an int64:
 * s_load_i64 below. */
double gx_cpu_load_f64(const void *p, gx_dtype dt, int64_t i)
{
    switch (dt) {
    case GX_F32: return ((const float *)p)[i];
    case GX_F16: return gx_f16_to_f32(((const uint16_t *)p)[i]);
    case GX_BF16: return gx_bf16_to_f32(((const uint16_t *)p)[i]);
    case GX_F64: return ((const double *)p)[i];
    case GX_I64: return (double)((const int64_t *)p)[i];
    case GX_I32: return ((const int32_t *)p)[i];
    case GX_I8: return ((const int8_t *)p)[i];
    case GX_U8: return ((const uint8_t *)p)[i];
    case GX_BOOL: return ((const uint8_t *)p)[i] != 0;
    case GX_I16: return ((const int16_t *)p)[i];
    case GX_U16: return ((const uint16_t *)p)[i];
    case GX_U32: return ((const uint32_t *)p)[i];
    case GX_U64: return (double)((const uint64_t *)p)[i];
    case GX_STRING:
    case GX_DTYPE_COUNT: break;
    }
    return 0;
}

/* Only called for integer dtypes; uint64 above INT64_MAX wraps. */
static int64_t s_load_i64(const void *p, gx_dtype dt, int64_t i)
{
    switch (dt) {
    case GX_I64: return ((const int64_t *)p)[i];
    case GX_I32: return ((const int32_t *)p)[i];
    case GX_I8: return ((const int8_t *)p)[i];
    case GX_U8: return ((const uint8_t *)p)[i];
    case GX_BOOL: return ((const uint8_t *)p)[i] != 0;
    case GX_I16: return ((const int16_t *)p)[i];
    case GX_U16: return ((const uint16_t *)p)[i];
    case GX_U32: return ((const uint32_t *)p)[i];
    case GX_U64: return (int64_t)((const uint64_t *)p)[i];
    case GX_F32:
    case GX_F16:
    case GX_BF16:
    case GX_F64:
    case GX_STRING:
    case GX_DTYPE_COUNT: break;
    }
    return 0;
}

static bool s_is_int(gx_dtype dt)
{
    return dt != GX_F32 && dt != GX_F16 && dt != GX_BF16 && dt != GX_F64;
}

/* v truncated into [lo, hi] (NaN: 0), as numpy's astype would for values
 * in range, without the UB of converting one out of range. */
static int64_t s_f64_to_int(double v, int64_t lo, int64_t hi)
{
    if (!(v == v))
        return 0;
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi) /* (double)INT64_MAX is 2^63, just out of range */
        return hi;
    return (int64_t)v;
}

/* Element i of Pow's output (base dtypes only: floats, int32, int64). */
static void s_store_pow(void *p, gx_dtype dt, int64_t i, double v, int64_t iv, bool exact)
{
    switch (dt) {
    case GX_F32: ((float *)p)[i] = (float)v; return;
    case GX_F16: ((uint16_t *)p)[i] = gx_f32_to_f16((float)v); return;
    case GX_BF16: ((uint16_t *)p)[i] = gx_f32_to_bf16((float)v); return;
    case GX_F64: ((double *)p)[i] = v; return;
    case GX_I64: ((int64_t *)p)[i] = exact ? iv : s_f64_to_int(v, INT64_MIN, INT64_MAX); return;
    case GX_I32:
        ((int32_t *)p)[i] = exact ? (int32_t)iv : (int32_t)s_f64_to_int(v, INT32_MIN, INT32_MAX);
        return;
    case GX_I8:
    case GX_U8:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT: return;
    }
}

/* b^e in integers, wrapping; a negative e gives the truncated 1 / b^|e|. */
static int64_t s_ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    for (; e; e >>= 1, x *= x) {
        if (e & 1)
            r *= x;
    }
    return (int64_t)r;
}

/* Pow for any pair of dtypes, one element at a time: integer ^ integer
 * exactly (numpy's integer power), everything else through double pow.
 * sa, sb: 1 for an advancing operand, 0 for a repeated one. */
static void s_pow_any(int64_t n, void *y, const void *a, int64_t sa, const void *b, int64_t sb,
                      const s_ctx *c)
{
    const bool exact = s_is_int(c->ta) && s_is_int(c->tb);
    for (int64_t i = 0; i < n; i++) {
        if (exact)
            s_store_pow(y, c->ta, i, 0, s_ipow(s_load_i64(a, c->ta, i * sa),
                                               s_load_i64(b, c->tb, i * sb)), true);
        else
            s_store_pow(y, c->ta, i,
                        pow(gx_cpu_load_f64(a, c->ta, i * sa), gx_cpu_load_f64(b, c->tb, i * sb)),
                        0, false);
    }
}

static void s_pow_any_vv(int64_t n, void *restrict y, const void *restrict a,
                         const void *restrict b, const s_ctx *c)
{
    s_pow_any(n, y, a, 1, b, 1, c);
}

static void s_pow_any_vs(int64_t n, void *restrict y, const void *restrict a,
                         const void *restrict b, const s_ctx *c)
{
    s_pow_any(n, y, a, 1, b, 0, c);
}

static void s_pow_any_sv(int64_t n, void *restrict y, const void *restrict a,
                         const void *restrict b, const s_ctx *c)
{
    s_pow_any(n, y, a, 0, b, 1, c);
}

static const s_rows2 s_pow_any_rows = {s_pow_any_vv, s_pow_any_vs, s_pow_any_sv, NULL, NULL};

/* float32 ^ float32 is the common case (x^2 in norms): libm's powf per
 * element, and a multiplication for the exponent 2. */
#define S_POW_F32(x, z) powf(x, z)
#define S_SQUARE(x, z) ((x) * (x))
S_ROWS2(F32, float, float, uint32_t, S_ID, S_ID, 0, 0, POW, S_POW_F32)
S_ROWS2(F32, float, float, uint32_t, S_ID, S_ID, 0, 0, SQUARE, S_SQUARE)
static const s_rows2 s_pow_f32 = {s_POW_F32_vv, s_POW_F32_vs, s_POW_F32_sv, NULL, NULL};
static const s_rows2 s_square_f32 = {s_SQUARE_F32_vv, s_SQUARE_F32_vs, s_SQUARE_F32_sv, NULL,
                                     NULL};

void gx_cpu_POW(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1];
    const s_ctx c = {.ta = a->dtype, .tb = b->dtype};
    if (a->dtype != GX_F32 || b->dtype != GX_F32)
        s_binary(k, &s_pow_any_rows, &c);
    else if (b->numel == 1 && *(const float *)b->data == 2.0f)
        s_binary(k, &s_square_f32, &c);
    else
        s_binary(k, &s_pow_f32, &c);
}

/* ---- unary ops ---- */

#define S_RELU(v) ((v) < 0 ? (ct)0 : (v)) /* NaN stays NaN */
#define S_NEG_F(v) (-(v))
#define S_NEG_S(v) ((ct)(0u - (ut)(v)))
#define S_ABS_F(v) S_F(fabsf, fabs, v)
#define S_ABS_S(v) ((v) < 0 ? (ct)(0u - (ut)(v)) : (v))
#define S_ABS_U(v) (v)
#define S_SIGN_F(v) ((v) > 0 ? (ct)1 : (v) < 0 ? (ct)-1 : (v)) /* 0 and NaN stay */
#define S_SIGN_S(v) ((ct)(((v) > 0) - ((v) < 0)))
#define S_SIGN_U(v) ((ct)((v) > 0))
#define S_SIGMOID(v) S_F(gx_v_sigmoidf, s_sigmoid_d, v)
#define S_TANH(v) S_F(gx_v_tanhf, tanh, v)
#define S_EXP(v) S_F(gx_v_expf, exp, v)
/* sqrtf: libm's, a single instruction, which gcc does not vectorise while
 * it must set errno for negative inputs */
#define S_SQRT(v) S_F(sqrtf, sqrt, v)
#define S_RECIPROCAL(v) ((ct)1 / (v))
#define S_LOG(v) S_F(gx_v_logf, log, v)
#define S_ERF(v) S_F(gx_v_erff, erf, v)
#define S_FLOOR(v) S_F(gx_v_floorf, floor, v)
#define S_CEIL(v) S_F(gx_v_ceilf, ceil, v)
#define S_ROUND(v) S_F(gx_v_rintf, nearbyint, v) /* half to even */
#define S_SIN(v) S_F(gx_v_sinf, sin, v)
#define S_COS(v) S_F(gx_v_cosf, cos, v)
#define S_TAN(v) S_F(gx_v_tanf, tan, v)
/* the rarely hot ones: libm */
#define S_ASIN(v) S_F(asinf, asin, v)
#define S_ACOS(v) S_F(acosf, acos, v)
#define S_ATAN(v) S_F(atanf, atan, v)
#define S_SINH(v) S_F(sinhf, sinh, v)
#define S_COSH(v) S_F(coshf, cosh, v)
#define S_ASINH(v) S_F(asinhf, asinh, v)
#define S_ACOSH(v) S_F(acoshf, acosh, v)
#define S_ATANH(v) S_F(atanhf, atanh, v)
#define S_SOFTPLUS(v) S_F(gx_v_softplusf, s_softplus_d, v)
#define S_SOFTSIGN(v) ((v) / ((ct)1 + S_F(fabsf, fabs, v)))
#define S_EXPM1(v) S_F(gx_v_expm1f, expm1, v)
/* p0, p1: the attributes in the order of the op's GX_<OP>_* enum */
#define S_LEAKYRELU(v) S_SEL((v) < 0, p0 * (v), (v))
#define S_ELU(v) S_SEL((v) < 0, p0 * S_EXPM1(v), (v))
#define S_SELU(v) (p1 * S_SEL((v) <= 0, p0 * S_EXPM1(v), (v)))
/* max(0, x) + min(0, alpha (e^(x/alpha) - 1)), for either sign of alpha */
#define S_CELU(v) S_SEL((v) > 0, (v), p0 * S_EXPM1((v) / p0))
#define S_HARDSIGMOID(v) S_F(s_clamp01f, s_clamp01d, p0 * (v) + p1)
#define S_HARDSWISH(v) ((v) * S_F(s_clamp01f, s_clamp01d, (ct)(1.0 / 6.0) * (v) + (ct)0.5))
/* Mish (opset 18) and Swish (opset 24, alpha) */
#define S_MISH(v) ((v) * S_TANH(S_SOFTPLUS(v)))
#define S_SWISH(v) ((v) * S_SIGMOID(p0 * (v)))
#define S_THRESHOLDEDRELU(v) ((v) > p0 ? (v) : (ct)0)
#define S_SHRINK(v) S_SEL((v) < -p1, (v) + p0, S_SEL((v) > p1, (v) - p0, (ct)0))
/* x Phi(x) = x erfc(-x / sqrt 2) / 2: erfc keeps the negative tail
 * accurate where 1 + erf would cancel (within 2e-5: the rounding of
 * x / sqrt 2 grows in e^(-x^2 / 2)) */
#define S_GELU_ERF(v) ((ct)0.5 * (v) * S_F(gx_v_erfcf, erfc, (v) * (ct)-0.70710678118654752440))
/* x (1 + tanh u) / 2 as x sigmoid(2 u), the same function: no 1 + tanh
 * to cancel in the negative tail */
#define S_GELU_TANH(v)                                                        \
    ((v) * S_SIGMOID((ct)1.5957691216057307118 * ((v) + (ct)0.044715 * (v) * (v) * (v))))

/* Clip: bounds in the storage type, absent ones the dtype's extremes;
 * min > max gives max (as numpy's clip); NaN stays NaN. */
#define S_ROWCLIP(D, T, C, U, LD, ST, LOW, HIGH, ...)                         \
    static void s_CLIP_##D(int64_t n, void *restrict yv, const void *restrict xv, \
                           const s_ctx *c)                                    \
    {                                                                         \
        T *restrict y = yv;                                                   \
        const T *restrict x = xv;                                             \
        const C lo = c->lo ? LD(*(const T *)c->lo) : (C)(LOW);                \
        const C hi = c->hi ? LD(*(const T *)c->hi) : (C)(HIGH);               \
        for (int64_t i = 0; i < n; i++) {                                     \
            const C v = LD(x[i]), t = v < lo ? lo : v;                        \
            y[i] = ST(t > hi ? hi : t);                                       \
        }                                                                     \
    }
S_FLOATS(S_ROWCLIP, _)
S_SINTS(S_ROWCLIP, _)
S_UINTS(S_ROWCLIP, _)
static const s_row1 s_clip[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY1, CLIP)};

/* The float unary ops: X(OP, EXPR). */
#define S_FLOAT_UNARY(X)                                                      \
    X(SIGMOID, S_SIGMOID)                                                     \
    X(TANH, S_TANH)                                                           \
    X(EXP, S_EXP)                                                             \
    X(SQRT, S_SQRT)                                                           \
    X(RECIPROCAL, S_RECIPROCAL)                                               \
    X(LOG, S_LOG)                                                             \
    X(ERF, S_ERF)                                                             \
    X(FLOOR, S_FLOOR)                                                         \
    X(CEIL, S_CEIL)                                                           \
    X(ROUND, S_ROUND)                                                         \
    X(ASIN, S_ASIN)                                                           \
    X(ACOS, S_ACOS)                                                           \
    X(ATAN, S_ATAN)                                                           \
    X(SINH, S_SINH)                                                           \
    X(COSH, S_COSH)                                                           \
    X(ASINH, S_ASINH)                                                         \
    X(ACOSH, S_ACOSH)                                                         \
    X(ATANH, S_ATANH)                                                         \
    X(SOFTPLUS, S_SOFTPLUS)                                                   \
    X(SOFTSIGN, S_SOFTSIGN)                                                   \
    X(HARDSWISH, S_HARDSWISH)                                                 \
    X(MISH, S_MISH)                                                           \
    X(SWISH, S_SWISH)                                                         \
    X(LEAKYRELU, S_LEAKYRELU)                                                 \
    X(ELU, S_ELU)                                                             \
    X(SELU, S_SELU)                                                           \
    X(CELU, S_CELU)                                                           \
    X(HARDSIGMOID, S_HARDSIGMOID)                                             \
    X(THRESHOLDEDRELU, S_THRESHOLDEDRELU)                                     \
    X(SHRINK, S_SHRINK)                                                       \
    X(GELU_ERF, S_GELU_ERF)                                                   \
    X(GELU_TANH, S_GELU_TANH)

#define S_STAMP_FLOAT_UNARY(OP, EXPR) S_FLOATS(S_ROW1, OP, EXPR)
S_FLOAT_UNARY(S_STAMP_FLOAT_UNARY)
S_FLOATS(S_ROW1TRIG, SIN, S_SIN, sin)
S_FLOATS(S_ROW1TRIG, COS, S_COS, cos)
S_FLOATS(S_ROW1TRIG, TAN, S_TAN, tan)
S_FLOATS(S_ROW1, RELU, S_RELU)
S_SINTS(S_ROW1, RELU, S_RELU)
S_FLOATS(S_ROW1, NEG, S_NEG_F)
S_SINTS(S_ROW1, NEG, S_NEG_S)
S_ROWS_NUM(S_ROW1, ABS, S_ABS_F, S_ABS_S, S_ABS_U)
S_ROWS_NUM(S_ROW1, SIGN, S_SIGN_F, S_SIGN_S, S_SIGN_U)

/* The unary ops' tables s_tab_<OP>[dtype]. */
#define S_FLOAT_TABLE(OP, ...)                                                \
    static const s_row1 s_tab_##OP[GX_DTYPE_COUNT] = {S_FLOATS(S_ENTRY1, OP, _)};
S_FLOAT_UNARY(S_FLOAT_TABLE)
S_FLOAT_TABLE(SIN)
S_FLOAT_TABLE(COS)
S_FLOAT_TABLE(TAN)
static const s_row1 s_tab_RELU[GX_DTYPE_COUNT] = {S_FLOATS(S_ENTRY1, RELU, _)
                                                      S_SINTS(S_ENTRY1, RELU, _)};
static const s_row1 s_tab_NEG[GX_DTYPE_COUNT] = {S_FLOATS(S_ENTRY1, NEG, _)
                                                     S_SINTS(S_ENTRY1, NEG, _)};
static const s_row1 s_tab_ABS[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY1, ABS)};
static const s_row1 s_tab_SIGN[GX_DTYPE_COUNT] = {S_TABLE_NUM(S_ENTRY1, SIGN)};

/* gx_cpu_<OP> of a unary op whose rows see P0, P1 as p0, p1. */
#define S_UNARY_KERNEL(OP, P0, P1)                                            \
    void gx_cpu_##OP(const gx_kargs *k)                                       \
    {                                                                         \
        s_unary(k, s_tab_##OP[k->in[0].dtype], &(s_ctx){.p = {P0, P1}});      \
    }
#define S_ATTR(E) k->attr[GX_##E].f

S_UNARY_KERNEL(RELU, 0, 0)
S_UNARY_KERNEL(NEG, 0, 0)
S_UNARY_KERNEL(ABS, 0, 0)
S_UNARY_KERNEL(SIGN, 0, 0)
S_UNARY_KERNEL(SIGMOID, 0, 0)
S_UNARY_KERNEL(TANH, 0, 0)
S_UNARY_KERNEL(EXP, 0, 0)
S_UNARY_KERNEL(SQRT, 0, 0)
S_UNARY_KERNEL(RECIPROCAL, 0, 0)
S_UNARY_KERNEL(LOG, 0, 0)
S_UNARY_KERNEL(ERF, 0, 0)
S_UNARY_KERNEL(FLOOR, 0, 0)
S_UNARY_KERNEL(CEIL, 0, 0)
S_UNARY_KERNEL(ROUND, 0, 0)
S_UNARY_KERNEL(SIN, 0, 0)
S_UNARY_KERNEL(COS, 0, 0)
S_UNARY_KERNEL(TAN, 0, 0)
S_UNARY_KERNEL(ASIN, 0, 0)
S_UNARY_KERNEL(ACOS, 0, 0)
S_UNARY_KERNEL(ATAN, 0, 0)
S_UNARY_KERNEL(SINH, 0, 0)
S_UNARY_KERNEL(COSH, 0, 0)
S_UNARY_KERNEL(ASINH, 0, 0)
S_UNARY_KERNEL(ACOSH, 0, 0)
S_UNARY_KERNEL(ATANH, 0, 0)
S_UNARY_KERNEL(SOFTPLUS, 0, 0)
S_UNARY_KERNEL(SOFTSIGN, 0, 0)
S_UNARY_KERNEL(HARDSWISH, 0, 0)
S_UNARY_KERNEL(MISH, 0, 0)
S_UNARY_KERNEL(SWISH, S_ATTR(SWISH_ALPHA), 0)
S_UNARY_KERNEL(LEAKYRELU, S_ATTR(LEAKYRELU_ALPHA), 0)
S_UNARY_KERNEL(ELU, S_ATTR(ELU_ALPHA), 0)
S_UNARY_KERNEL(SELU, S_ATTR(SELU_ALPHA), S_ATTR(SELU_GAMMA))
S_UNARY_KERNEL(CELU, S_ATTR(CELU_ALPHA), 0)
S_UNARY_KERNEL(HARDSIGMOID, S_ATTR(HARDSIGMOID_ALPHA), S_ATTR(HARDSIGMOID_BETA))
S_UNARY_KERNEL(THRESHOLDEDRELU, S_ATTR(THRESHOLDEDRELU_ALPHA), 0)
S_UNARY_KERNEL(SHRINK, S_ATTR(SHRINK_BIAS), S_ATTR(SHRINK_LAMBD))

void gx_cpu_GELU(const gx_kargs *k)
{
    const bool tanh_approx = strcmp(k->attr[GX_GELU_APPROXIMATE].s, "tanh") == 0;
    s_unary(k, (tanh_approx ? s_tab_GELU_TANH : s_tab_GELU_ERF)[k->in[0].dtype], &(s_ctx){0});
}

/* One Clip bound: input i, else the opset-6 attribute (float dtypes only,
 * converted into buf), else none. */
static const void *s_clip_bound(const gx_kargs *k, int i, int attr, gx_dtype dt, double *buf)
{
    if (i < k->n_in && k->in[i].ndim >= 0)
        return k->in[i].data;
    if (!k->attr[attr].set)
        return NULL;
    const double v = k->attr[attr].f;
    switch (dt) {
    case GX_F32: *(float *)buf = (float)v; break;
    case GX_F16: *(uint16_t *)buf = gx_f32_to_f16((float)v); break;
    case GX_BF16: *(uint16_t *)buf = gx_f32_to_bf16((float)v); break;
    case GX_F64: *buf = v; break;
    case GX_I64:
    case GX_I32:
    case GX_I8:
    case GX_U8:
    case GX_BOOL:
    case GX_I16:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_STRING:
    case GX_DTYPE_COUNT: return NULL; /* refused by infer */
    }
    return buf;
}

void gx_cpu_CLIP(const gx_kargs *k)
{
    const gx_dtype dt = k->in[0].dtype;
    double lo, hi;
    const s_ctx c = {.lo = s_clip_bound(k, 1, GX_CLIP_MIN, dt, &lo),
                     .hi = s_clip_bound(k, 2, GX_CLIP_MAX, dt, &hi)};
    s_unary(k, s_clip[dt], &c);
}
