/*
 * CPU kernels of the reduce family (GX_OPS_REDUCE in ops/op.h).
 *
 * Reduce*: the input is seen with its size-1 dims dropped and neighbouring
 * dims of one kind (kept / reduced) merged, so any axes set becomes an
 * alternation of kept and reduced blocks. A thread's share is a range of
 * outputs, each computed whole by one thread (no cross-thread combining).
 * Two walks cover every layout:
 *   rows:    the innermost block is reduced: each output folds contiguous
 *            rows, in S_LANES independent accumulators (vectorised);
 *   columns: the innermost block is kept: up to S_COLS neighbouring outputs
 *            fold contiguous input rows element by element (vectorised).
 * Each op is four expressions (identity, map of an element, combine,
 * finish); macros stamp them per dtype into the functions of an s_reducer.
 * ReduceLogSumExp is two passes: a ReduceMax whose result (0 where it is
 * not finite) is the shift of exp(x - shift), so it neither overflows nor
 * turns an all -inf or empty reduction into NaN.
 *
 * ArgMax/ArgMin walk [outer, n, inner] rows or columns. TopK keeps a heap
 * of the k best (value, index) pairs of a slice in the output slice itself
 * (worst on top), then sorts it in place: no scratch, n log k compares.
 */
#include <math.h>
#include <stdint.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#endif

#include "ops/cpu/cpu.h"
#include "ops/cpu/vmath.h"

/* Accumulators of a row (a multiple of the widest vector). */
#define S_LANES 16
/* Outputs handled together (8 KiB of accumulators): long contiguous runs
 * for the columns walk. */
#define S_COLS 1024

/* ---- per-dtype arithmetic ----
 * Kinds: F float (NaN aware), S signed int (accumulated in int64_t with
 * wrapping arithmetic: overflow wraps like the narrow type would), U
 * unsigned int (accumulated in uint64_t). */
#define S_ADD_F(a, b) ((a) + (b))
#define S_ADD_S(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define S_ADD_U(a, b) ((a) + (b))
#define S_MUL_F(a, b) ((a) * (b))
#define S_MUL_S(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define S_MUL_U(a, b) ((a) * (b))
#define S_ABS_F(a) ((a) < 0 ? -(a) : (a))
#define S_ABS_S(a) ((a) < 0 ? (int64_t)(0 - (uint64_t)(a)) : (a))
#define S_ABS_U(a) (a)
/* NaN wins max and min, as in numpy (| rather than ||: no branch, so the
 * select vectorises) */
#define S_MAX_F(a, v) (((v) > (a)) | ((v) != (v)) ? (v) : (a))
#define S_MAX_S(a, v) ((v) > (a) ? (v) : (a))
#define S_MAX_U(a, v) ((v) > (a) ? (v) : (a))
#define S_MIN_F(a, v) (((v) < (a)) | ((v) != (v)) ? (v) : (a))
#define S_MIN_S(a, v) ((v) < (a) ? (v) : (a))
#define S_MIN_U(a, v) ((v) < (a) ? (v) : (a))
/* mean of nothing: NaN for floats, 0 for integers */
#define S_DIV_F(a, n) ((a) / (n))
#define S_DIV_S(a, n) ((n) ? (a) / (int64_t)(n) : 0)
#define S_DIV_U(a, n) ((n) ? (a) / (uint64_t)(n) : 0)
#define S_ISNAN_F(a) ((a) != (a))
#define S_ISNAN_S(a) 0
#define S_ISNAN_U(a) 0

#define S_LOWEST_F32 (-INFINITY)
#define S_LOWEST_F64 (-INFINITY)
#define S_LOWEST_I32 INT32_MIN
#define S_LOWEST_I64 INT64_MIN
#define S_LOWEST_U32 0
#define S_LOWEST_U64 0
#define S_HIGHEST_F32 INFINITY
#define S_HIGHEST_F64 INFINITY
#define S_HIGHEST_I32 INT32_MAX
#define S_HIGHEST_I64 INT64_MAX
#define S_HIGHEST_U32 UINT32_MAX
#define S_HIGHEST_U64 UINT64_MAX
#define S_EXP_F32 gx_v_expf
#define S_EXP_F64 exp

/* X(OP, dtype suffix, element type, accumulator type, kind) */
#define S_DTYPES_FLOAT(X, OP)                                                 \
    X(OP, F32, float, float, F)                                               \
    X(OP, F64, double, double, F)
#define S_DTYPES_NUM(X, OP)                                                   \
    S_DTYPES_FLOAT(X, OP)                                                     \
    X(OP, I32, int32_t, int64_t, S)                                           \
    X(OP, I64, int64_t, int64_t, S)                                           \
    X(OP, U32, uint32_t, uint64_t, U)                                         \
    X(OP, U64, uint64_t, uint64_t, U)

/* ---- the ops: identity, map of element x (shift s), combine, finish of
 * accumulator a over n elements (shift s), and how a row's lanes loop is
 * compiled: unrolled, the lanes of sums and products stay in vector
 * registers (gcc's SLP); the selects of max and min vectorise only as a
 * loop (lanes in memory) ---- */
#define S_UNROLLED _Pragma("GCC unroll 16")
#define S_LOOPED _Pragma("GCC unroll 1")
#define S_REDUCE_SUM_UNROLL S_UNROLLED
#define S_REDUCE_MEAN_UNROLL S_UNROLLED
#define S_REDUCE_MAX_UNROLL S_LOOPED
#define S_REDUCE_MIN_UNROLL S_LOOPED
#define S_REDUCE_PROD_UNROLL S_UNROLLED
#define S_REDUCE_L1_UNROLL S_UNROLLED
#define S_REDUCE_SUM_SQUARE_UNROLL S_UNROLLED
#define S_REDUCE_L2_UNROLL S_UNROLLED
#define S_REDUCE_LOG_SUM_UNROLL S_UNROLLED
#define S_REDUCE_LOG_SUM_EXP_UNROLL S_UNROLLED

#define S_REDUCE_SUM_INIT(DT) 0
#define S_REDUCE_SUM_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_SUM_COMB(K, a, v) S_ADD_##K(a, v)
#define S_REDUCE_SUM_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_MEAN_INIT(DT) 0
#define S_REDUCE_MEAN_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_MEAN_COMB(K, a, v) S_ADD_##K(a, v)
#define S_REDUCE_MEAN_FIN(K, T, A, a, s, n) ((T)S_DIV_##K(a, (A)(n)))

#define S_REDUCE_MAX_INIT(DT) S_LOWEST_##DT
#define S_REDUCE_MAX_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_MAX_COMB(K, a, v) S_MAX_##K(a, v)
#define S_REDUCE_MAX_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_MIN_INIT(DT) S_HIGHEST_##DT
#define S_REDUCE_MIN_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_MIN_COMB(K, a, v) S_MIN_##K(a, v)
#define S_REDUCE_MIN_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_PROD_INIT(DT) 1
#define S_REDUCE_PROD_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_PROD_COMB(K, a, v) S_MUL_##K(a, v)
#define S_REDUCE_PROD_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_L1_INIT(DT) 0
#define S_REDUCE_L1_MAP(DT, K, A, x, s) S_ABS_##K((A)(x))
#define S_REDUCE_L1_COMB(K, a, v) S_ADD_##K(a, v)
#define S_REDUCE_L1_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_SUM_SQUARE_INIT(DT) 0
#define S_REDUCE_SUM_SQUARE_MAP(DT, K, A, x, s) S_MUL_##K((A)(x), (A)(x))
#define S_REDUCE_SUM_SQUARE_COMB(K, a, v) S_ADD_##K(a, v)
#define S_REDUCE_SUM_SQUARE_FIN(K, T, A, a, s, n) ((T)(a))

#define S_REDUCE_L2_INIT(DT) 0
#define S_REDUCE_L2_MAP(DT, K, A, x, s) ((A)(x) * (A)(x))
#define S_REDUCE_L2_COMB(K, a, v) ((a) + (v))
#define S_REDUCE_L2_FIN(K, T, A, a, s, n) ((T)sqrt((double)(a)))

#define S_REDUCE_LOG_SUM_INIT(DT) 0
#define S_REDUCE_LOG_SUM_MAP(DT, K, A, x, s) ((A)(x))
#define S_REDUCE_LOG_SUM_COMB(K, a, v) ((a) + (v))
#define S_REDUCE_LOG_SUM_FIN(K, T, A, a, s, n) ((T)log((double)(a)))

#define S_REDUCE_LOG_SUM_EXP_INIT(DT) 0
#define S_REDUCE_LOG_SUM_EXP_MAP(DT, K, A, x, s) S_EXP_##DT((A)(x) - (s))
#define S_REDUCE_LOG_SUM_EXP_COMB(K, a, v) ((a) + (v))
#define S_REDUCE_LOG_SUM_EXP_FIN(K, T, A, a, s, n) ((T)((double)(s) + log((double)(a))))

/* ---- reducers ---- */

/* One op on one dtype. acc and shift hold accumulator-typed values; shift
 * is only read by ops with a first pass (LogSumExp), whose init also turns
 * a non-finite shift into 0. */
typedef struct s_reducer {
    size_t es; /* element size of input and output */
    size_t as; /* accumulator size */
    const struct s_reducer *first; /* pass whose results are the shift, or NULL */
    void (*init)(void *acc, int64_t w, void *shift);
    /* folds the n contiguous elements x[0..n) into the one accumulator */
    void (*row)(const void *x, int64_t n, void *acc, const void *shift);
    /* folds x[c], then x[st + c] ... x[(rows - 1) * st + c] into acc[c] for
     * c < w; rows <= 4, so that each acc[c] is loaded and stored once per
     * four input rows */
    void (*cols)(const void *x, int64_t rows, int64_t st, int64_t w, void *acc, const void *shift);
    /* y[c] = finish(acc[c]) over count elements, c < w */
    void (*fin)(const void *acc, const void *shift, int64_t w, int64_t count, void *y);
} s_reducer;

#define S_SHIFT_FIX_F(A, sh, w)                                               \
    for (int64_t c = 0; c < (w); c++)                                         \
        (sh)[c] = isfinite((sh)[c]) ? (sh)[c] : (A)0;

#define S_REDUCER(OP, DT, T, A, K, FIRST, FIX_SHIFT)                          \
    static void s_init_##OP##_##DT(void *accv, int64_t w, void *shv)          \
    {                                                                         \
        A *acc = accv, *sh = shv;                                             \
        (void)sh;                                                             \
        for (int64_t c = 0; c < w; c++)                                       \
            acc[c] = S_##OP##_INIT(DT);                                       \
        FIX_SHIFT(A, sh, w)                                                   \
    }                                                                         \
    static void s_row_##OP##_##DT(const void *xv, int64_t n, void *accv, const void *shv) \
    {                                                                         \
        const T *restrict x = xv;                                             \
        A *acc = accv;                                                        \
        const A s = shv ? *(const A *)shv : (A)0;                             \
        A a = *acc;                                                           \
        int64_t i = 0;                                                        \
        (void)s;                                                              \
        if (n >= S_LANES) {                                                   \
            A lane[S_LANES];                                                  \
            for (int j = 0; j < S_LANES; j++)                                 \
                lane[j] = S_##OP##_INIT(DT);                                  \
            for (; i + S_LANES <= n; i += S_LANES) {                          \
                S_##OP##_UNROLL for (int j = 0; j < S_LANES; j++)             \
                    lane[j] = S_##OP##_COMB(K, lane[j], S_##OP##_MAP(DT, K, A, x[i + j], s)); \
            }                                                                 \
            for (int j = 0; j < S_LANES; j++)                                 \
                a = S_##OP##_COMB(K, a, lane[j]);                             \
        }                                                                     \
        for (; i < n; i++)                                                    \
            a = S_##OP##_COMB(K, a, S_##OP##_MAP(DT, K, A, x[i], s));         \
        *acc = a;                                                             \
    }                                                                         \
    static void s_cols_##OP##_##DT(const void *xv, int64_t rows, int64_t st, int64_t w, \
                                   void *accv, const void *shv)               \
    {                                                                         \
        const T *restrict x = xv;                                             \
        A *restrict acc = accv;                                               \
        const A *restrict sh = shv;                                           \
        (void)sh;                                                             \
        if (rows == 4) {                                                      \
            for (int64_t c = 0; c < w; c++) {                                 \
                A a = S_##OP##_COMB(K, acc[c], S_##OP##_MAP(DT, K, A, x[c], sh[c])); \
                a = S_##OP##_COMB(K, a, S_##OP##_MAP(DT, K, A, x[st + c], sh[c])); \
                a = S_##OP##_COMB(K, a, S_##OP##_MAP(DT, K, A, x[2 * st + c], sh[c])); \
                acc[c] = S_##OP##_COMB(K, a, S_##OP##_MAP(DT, K, A, x[3 * st + c], sh[c])); \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        for (int64_t r = 0; r < rows; r++) {                                  \
            const T *restrict xr = x + r * st;                                \
            for (int64_t c = 0; c < w; c++)                                   \
                acc[c] = S_##OP##_COMB(K, acc[c], S_##OP##_MAP(DT, K, A, xr[c], sh[c])); \
        }                                                                     \
    }                                                                         \
    static void s_fin_##OP##_##DT(const void *accv, const void *shv, int64_t w, int64_t count, \
                                  void *yv)                                   \
    {                                                                         \
        const A *acc = accv, *sh = shv;                                       \
        T *y = yv;                                                            \
        (void)sh;                                                             \
        (void)count;                                                          \
        for (int64_t c = 0; c < w; c++)                                       \
            y[c] = S_##OP##_FIN(K, T, A, acc[c], sh[c], count);               \
    }                                                                         \
    static const s_reducer s_red_##OP##_##DT = {                              \
        .es = sizeof(T), .as = sizeof(A), .first = FIRST, .init = s_init_##OP##_##DT,          \
        .row = s_row_##OP##_##DT, .cols = s_cols_##OP##_##DT,                 \
        .fin = s_fin_##OP##_##DT,                                             \
    };

#define S_NO_FIX(A, sh, w)
#define S_PLAIN(OP, DT, T, A, K) S_REDUCER(OP, DT, T, A, K, NULL, S_NO_FIX)
#define S_SHIFTED(OP, DT, T, A, K)                                            \
    S_REDUCER(OP, DT, T, A, K, &s_red_REDUCE_MAX_##DT, S_SHIFT_FIX_F)

S_DTYPES_NUM(S_PLAIN, REDUCE_SUM)
S_DTYPES_NUM(S_PLAIN, REDUCE_MEAN)
S_DTYPES_NUM(S_PLAIN, REDUCE_MAX)
S_DTYPES_NUM(S_PLAIN, REDUCE_MIN)
S_DTYPES_NUM(S_PLAIN, REDUCE_PROD)
S_DTYPES_NUM(S_PLAIN, REDUCE_L1)
S_DTYPES_NUM(S_PLAIN, REDUCE_SUM_SQUARE)
S_DTYPES_FLOAT(S_PLAIN, REDUCE_L2)
S_DTYPES_FLOAT(S_PLAIN, REDUCE_LOG_SUM)
S_DTYPES_FLOAT(S_SHIFTED, REDUCE_LOG_SUM_EXP)

/* ---- the walks ---- */

/* Accumulators of S_COLS outputs, of any accumulator type. */
typedef union s_accs {
    float f[S_COLS];
    double d[S_COLS];
    int64_t i[S_COLS];
    uint64_t u[S_COLS];
} s_accs;

/* An odometer over some dims (sizes, element strides): off is the offset
 * of the current index. */
typedef struct s_odo {
    int n;
    int64_t size[GX_MAX_DIMS], stride[GX_MAX_DIMS], idx[GX_MAX_DIMS];
    int64_t off;
} s_odo;

static void s_odo_seek(s_odo *o, int64_t flat)
{
    o->off = 0;
    for (int d = o->n - 1; d >= 0; d--) {
        o->idx[d] = flat % o->size[d];
        flat /= o->size[d];
        o->off += o->idx[d] * o->stride[d];
    }
}

static void s_odo_next(s_odo *o)
{
    for (int d = o->n - 1; d >= 0; d--) {
        o->off += o->stride[d];
        if (++o->idx[d] < o->size[d])
            return;
        o->off -= o->idx[d] * o->stride[d];
        o->idx[d] = 0;
    }
}

/* A reduction with the input's dims split: keep (the output's dims, in
 * order) and red (reduced), size-1 dims dropped and neighbours merged;
 * count is the number of elements folded into each output. */
typedef struct s_plan {
    s_odo keep, red;
    bool inner_reduced; /* the input's innermost dim is in red */
    int64_t count;
} s_plan;

static void s_plan_init(s_plan *p, const gx_view *x, const bool *mask)
{
    int64_t stride = 1;
    int last = -1; /* kind of the previous kept-in-plan dim: 0 keep, 1 red */
    p->keep.n = p->red.n = 0;
    p->count = 1;
    p->inner_reduced = false;
    /* walk from the innermost dim out, then reverse each list */
    for (int d = x->ndim - 1; d >= 0; d--) {
        int64_t n = x->shape[d];
        if (mask[d])
            p->count *= n;
        if (n != 1) {
            int kind = mask[d] ? 1 : 0;
            s_odo *o = kind ? &p->red : &p->keep;
            if (last == -1)
                p->inner_reduced = kind == 1;
            if (kind == last) {
                o->size[o->n - 1] *= n;
            } else {
                o->size[o->n] = n;
                o->stride[o->n] = stride;
                o->n++;
            }
            last = kind;
        }
        stride *= n;
    }
    for (int s = 0; s < 2; s++) {
        s_odo *o = s ? &p->red : &p->keep;
        for (int i = 0, j = o->n - 1; i < j; i++, j--) {
            int64_t t = o->size[i];
            o->size[i] = o->size[j];
            o->size[j] = t;
            t = o->stride[i];
            o->stride[i] = o->stride[j];
            o->stride[j] = t;
        }
    }
}

/* Folds every reduced position of one output at x into acc by rows; the
 * innermost reduced block is contiguous. */
static void s_fold_rows(const s_plan *p, s_odo *outer, const s_reducer *r, const char *x,
                        void *acc, const void *shift)
{
    const int64_t len = p->red.size[p->red.n - 1];
    if (outer->n == 0) {
        r->row(x, len, acc, shift);
        return;
    }
    const int64_t rows = p->count / len;
    s_odo_seek(outer, 0);
    for (int64_t i = 0; i < rows; i++, s_odo_next(outer))
        r->row(x + outer->off * (int64_t)r->es, len, acc, shift);
}

/* Folds every reduced position of w neighbouring outputs at x into acc[w],
 * four of the innermost reduced block at a time. */
static void s_fold_cols(const s_plan *p, const s_reducer *r, const char *x, int64_t w,
                        void *acc, const void *shift)
{
    if (p->red.n == 0) {
        r->cols(x, 1, 0, w, acc, shift);
        return;
    }
    s_odo outer = p->red;
    outer.n--;
    const int64_t len = p->red.size[p->red.n - 1], st = p->red.stride[p->red.n - 1];
    s_odo_seek(&outer, 0);
    for (int64_t i = 0; i < p->count / len; i++, s_odo_next(&outer)) {
        const char *xo = x + outer.off * (int64_t)r->es;
        for (int64_t j = 0; j < len; j += 4)
            r->cols(xo + j * st * (int64_t)r->es, len - j < 4 ? len - j : 4, st, w, acc, shift);
    }
}

static void s_reduce(const gx_kargs *k, const s_reducer *r)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    bool mask[GX_MAX_DIMS];
    gx_reduce_mask("", k->attr, k->n_in, k->in, mask, NULL, 0);
    s_plan p;
    s_plan_init(&p, x, mask);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    if (lo >= hi)
        return;
    const char *px = x->data;
    char *py = y->data;
    const int64_t es = (int64_t)r->es;
    s_accs acc, shift;
    if (p.count > 0 && p.inner_reduced) {
        /* rows: S_COLS outputs at a time, each folded on its own */
        const int64_t as = (int64_t)r->as;
        s_odo keep = p.keep, outer = p.red;
        outer.n--;
        s_odo_seek(&keep, lo);
        for (int64_t o0 = lo; o0 < hi; o0 += S_COLS) {
            const int64_t w = hi - o0 < S_COLS ? hi - o0 : S_COLS;
            s_odo start = keep;
            if (r->first) {
                r->first->init(&shift, w, NULL);
                for (int64_t j = 0; j < w; j++, s_odo_next(&keep))
                    s_fold_rows(&p, &outer, r->first, px + keep.off * es,
                                (char *)&shift + j * as, NULL);
                keep = start;
            }
            r->init(&acc, w, &shift);
            for (int64_t j = 0; j < w; j++, s_odo_next(&keep))
                s_fold_rows(&p, &outer, r, px + keep.off * es, (char *)&acc + j * as,
                            (char *)&shift + j * as);
            r->fin(&acc, &shift, w, p.count, py + o0 * es);
        }
        return;
    }
    /* columns: the innermost kept block is contiguous in x and y */
    const int64_t inner = p.keep.n ? p.keep.size[p.keep.n - 1] : 1;
    s_odo outer = p.keep;
    outer.n = outer.n ? outer.n - 1 : 0;
    s_odo_seek(&outer, lo / inner);
    for (int64_t o = lo; o < hi; s_odo_next(&outer)) {
        const int64_t c0 = o % inner, c1 = inner - c0 < hi - o ? inner : c0 + (hi - o);
        for (int64_t c = c0; c < c1; c += S_COLS) {
            const int64_t w = c1 - c < S_COLS ? c1 - c : S_COLS;
            /* an empty input may have no data to point into */
            const char *xo = p.count > 0 ? px + (outer.off + c) * es : NULL;
            if (r->first) {
                r->first->init(&shift, w, NULL);
                if (xo)
                    s_fold_cols(&p, r->first, xo, w, &shift, NULL);
            }
            r->init(&acc, w, &shift);
            if (xo)
                s_fold_cols(&p, r, xo, w, &acc, &shift);
            r->fin(&acc, &shift, w, p.count, py + (o + c - c0) * es);
        }
        o += c1 - c0;
    }
}

/* The reducers of an op by dtype; infer admitted only these. */
#define S_TABLE_ROW(OP, DT, T, A, K) [GX_##DT] = &s_red_##OP##_##DT,

#define S_REDUCE_KERNEL(OP, DTYPES)                                           \
    static const s_reducer *const s_tab_##OP[GX_DTYPE_COUNT] = {DTYPES(S_TABLE_ROW, OP)}; \
    void gx_cpu_##OP(const gx_kargs *k) { s_reduce(k, s_tab_##OP[k->in[0].dtype]); }

S_REDUCE_KERNEL(REDUCE_SUM, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_MEAN, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_MAX, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_MIN, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_PROD, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_L1, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_SUM_SQUARE, S_DTYPES_NUM)
S_REDUCE_KERNEL(REDUCE_L2, S_DTYPES_FLOAT)
S_REDUCE_KERNEL(REDUCE_LOG_SUM, S_DTYPES_FLOAT)
S_REDUCE_KERNEL(REDUCE_LOG_SUM_EXP, S_DTYPES_FLOAT)

/* ---- ArgMax / ArgMin ---- */

#define S_DTYPES_ANY(X, OP)                                                   \
    S_DTYPES_NUM(X, OP)                                                       \
    X(OP, I8, int8_t, int64_t, S)                                             \
    X(OP, U8, uint8_t, uint64_t, U)                                           \
    X(OP, I16, int16_t, int64_t, S)                                           \
    X(OP, U16, uint16_t, uint64_t, U)

/* v beats the best so far b (numpy: the first NaN wins) */
#define S_BETTER_MAX_FIRST(K, v, b) ((v) > (b) || (S_ISNAN_##K(v) && !S_ISNAN_##K(b)))
#define S_BETTER_MAX_LAST(K, v, b) ((v) >= (b) || S_ISNAN_##K(v))
#define S_BETTER_MIN_FIRST(K, v, b) ((v) < (b) || (S_ISNAN_##K(v) && !S_ISNAN_##K(b)))
#define S_BETTER_MIN_LAST(K, v, b) ((v) <= (b) || S_ISNAN_##K(v))

/* w <= S_COLS neighbouring columns of n > 0 elements, element j of column c
 * at x[j * inner + c]: y[c] = the index of the best. */
typedef void (*s_arg_fn)(const void *x, int64_t n, int64_t inner, int64_t w, int64_t *y);

#define S_ARG_FN(MODE, DT, T, A, K)                                           \
    static void s_arg_##MODE##_##DT(const void *xv, int64_t n, int64_t inner, int64_t w, \
                                    int64_t *restrict y)                      \
    {                                                                         \
        const T *x = xv;                                                      \
        T best[S_COLS];                                                       \
        for (int64_t c = 0; c < w; c++) {                                     \
            best[c] = x[c];                                                   \
            y[c] = 0;                                                         \
        }                                                                     \
        for (int64_t j = 1; j < n; j++) {                                     \
            const T *restrict xr = x + j * inner;                             \
            for (int64_t c = 0; c < w; c++) {                                 \
                const T v = xr[c];                                            \
                const bool b = S_BETTER_##MODE(K, v, best[c]);                \
                best[c] = b ? v : best[c];                                    \
                y[c] = b ? j : y[c];                                          \
            }                                                                 \
        }                                                                     \
    }

S_DTYPES_ANY(S_ARG_FN, MAX_FIRST)
S_DTYPES_ANY(S_ARG_FN, MAX_LAST)
S_DTYPES_ANY(S_ARG_FN, MIN_FIRST)
S_DTYPES_ANY(S_ARG_FN, MIN_LAST)

#define S_ARG_ROW(MODE, DT, T, A, K) [GX_##DT] = s_arg_##MODE##_##DT,
/* [max ? 0 : 2 + last][dtype] */
static const s_arg_fn s_arg_tab[4][GX_DTYPE_COUNT] = {
    {S_DTYPES_ANY(S_ARG_ROW, MAX_FIRST)},
    {S_DTYPES_ANY(S_ARG_ROW, MAX_LAST)},
    {S_DTYPES_ANY(S_ARG_ROW, MIN_FIRST)},
    {S_DTYPES_ANY(S_ARG_ROW, MIN_LAST)},
};

/* x as [outer, n, inner], y as [outer, inner]; a share is a range of y. */
static void s_arg(const gx_kargs *k, bool is_max)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int axis = 0;
    gx_axis_norm(k->attr[GX_ARG_AXIS].i, x->ndim, &axis);
    const int64_t n = x->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const s_arg_fn fn =
        s_arg_tab[(is_max ? 0 : 2) + (k->attr[GX_ARG_SELECT_LAST_INDEX].i != 0)][x->dtype];
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    const char *px = x->data;
    int64_t *py = y->data;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t o = u / inner, c0 = u % inner;
        const int64_t c1 = inner - c0 < hi - u ? inner : c0 + (hi - u);
        for (int64_t c = c0; c < c1; c += S_COLS) {
            const int64_t w = c1 - c < S_COLS ? c1 - c : S_COLS;
            fn(px + (o * n * inner + c) * es, n, inner, w, py + o * inner + c);
        }
        u += c1 - c0;
    }
}

void gx_cpu_ARGMAX(const gx_kargs *k)
{
    s_arg(k, true);
}

void gx_cpu_ARGMIN(const gx_kargs *k)
{
    s_arg(k, false);
}

/* ---- TopK ---- */

/* Order of values: NaN above everything, NaNs equal. */
#define S_GT_F(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))
#define S_GT_S(a, b) ((a) > (b))
#define S_GT_U(a, b) ((a) > (b))
#define S_EQ_F(a, b) ((a) == (b) || ((a) != (a) && (b) != (b)))
#define S_EQ_S(a, b) ((a) == (b))
#define S_EQ_U(a, b) ((a) == (b))

/* One slice: x[i * inner] for i < n into the k best, best first, at
 * v[j * inner] and idx[j * inner]. The output slice holds a heap with the
 * worst kept pair on top while x is scanned, then is heap-sorted. "Better"
 * is the larger (largest) or smaller value, the lower index on ties. */
typedef void (*s_topk_fn)(const void *x, int64_t n, int64_t inner, int64_t k, bool largest,
                          void *v, int64_t *idx);

#define S_TOPK_FN(OP, DT, T, A, K)                                            \
    static bool s_better_##DT(bool largest, T av, int64_t ai, T bv, int64_t bi) \
    {                                                                         \
        if (S_EQ_##K(av, bv))                                                 \
            return ai < bi;                                                   \
        return largest ? S_GT_##K(av, bv) : S_GT_##K(bv, av);                 \
    }                                                                         \
    static void s_sift_##DT(bool largest, T *v, int64_t *idx, int64_t inner, int64_t p, \
                            int64_t size)                                     \
    {                                                                         \
        for (;;) {                                                            \
            int64_t c = 2 * p + 1;                                            \
            if (c >= size)                                                    \
                return;                                                       \
            if (c + 1 < size &&                                               \
                s_better_##DT(largest, v[c * inner], idx[c * inner], v[(c + 1) * inner], \
                              idx[(c + 1) * inner]))                          \
                c++;                                                          \
            if (!s_better_##DT(largest, v[p * inner], idx[p * inner], v[c * inner], \
                               idx[c * inner]))                               \
                return;                                                       \
            T tv = v[p * inner];                                              \
            int64_t ti = idx[p * inner];                                      \
            v[p * inner] = v[c * inner];                                      \
            idx[p * inner] = idx[c * inner];                                  \
            v[c * inner] = tv;                                                \
            idx[c * inner] = ti;                                              \
            p = c;                                                            \
        }                                                                     \
    }                                                                         \
    static void s_topk_##DT(const void *xv, int64_t n, int64_t inner, int64_t k, \
                            bool largest, void *vv, int64_t *idx)             \
    {                                                                         \
        const T *x = xv;                                                      \
        T *v = vv;                                                            \
        if (k == 0)                                                           \
            return;                                                           \
        for (int64_t i = 0; i < k; i++) { /* the first k, heapified upwards */ \
            int64_t p = i;                                                    \
            const T xi = x[i * inner];                                        \
            while (p > 0) {                                                   \
                const int64_t q = (p - 1) / 2;                                \
                if (!s_better_##DT(largest, v[q * inner], idx[q * inner], xi, i)) \
                    break;                                                    \
                v[p * inner] = v[q * inner];                                  \
                idx[p * inner] = idx[q * inner];                              \
                p = q;                                                        \
            }                                                                 \
            v[p * inner] = xi;                                                \
            idx[p * inner] = i;                                               \
        }                                                                     \
        for (int64_t i = k; i < n; i++) {                                     \
            if (s_better_##DT(largest, x[i * inner], i, v[0], idx[0])) {      \
                v[0] = x[i * inner];                                          \
                idx[0] = i;                                                   \
                s_sift_##DT(largest, v, idx, inner, 0, k);                    \
            }                                                                 \
        }                                                                     \
        for (int64_t end = k - 1; end > 0; end--) {                           \
            T tv = v[0];                                                      \
            int64_t ti = idx[0];                                              \
            v[0] = v[end * inner];                                            \
            idx[0] = idx[end * inner];                                        \
            v[end * inner] = tv;                                              \
            idx[end * inner] = ti;                                            \
            s_sift_##DT(largest, v, idx, inner, 0, end);                      \
        }                                                                     \
    }

S_DTYPES_ANY(S_TOPK_FN, TOPK)

#define S_TOPK_ROW(OP, DT, T, A, K) [GX_##DT] = s_topk_##DT,
static const s_topk_fn s_topk_tab[GX_DTYPE_COUNT] = {S_DTYPES_ANY(S_TOPK_ROW, TOPK)};

#define S_TOPK_BLOCK 64

/* Bit i set when x[i] (i < S_TOPK_BLOCK) may beat a kept value t
 * (largest: is not at or below it; else not at or above it; NaN: may).
 * Compares of 16 lanes giving a mask where AVX-512 runs, else a plain
 * loop (vectorised). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx512f"))) static uint64_t s_past_512(const float *x, float t,
                                                               bool largest)
{
    const __m512 tv = _mm512_set1_ps(t);
    uint64_t m = 0;
    for (int i = 0; i < S_TOPK_BLOCK; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __mmask16 in = largest ? _mm512_cmp_ps_mask(v, tv, _CMP_NLE_UQ)
                                     : _mm512_cmp_ps_mask(v, tv, _CMP_NGE_UQ);
        m |= (uint64_t)in << i;
    }
    return m;
}
#endif

GX_CPU_CLONES static uint64_t s_past_plain(const float *restrict x, float t, bool largest)
{
    uint8_t hit[S_TOPK_BLOCK];
    for (int i = 0; i < S_TOPK_BLOCK; i++)
        hit[i] = largest ? !(x[i] <= t) : !(x[i] >= t);
    uint64_t m = 0;
    for (int i = 0; i < S_TOPK_BLOCK; i++)
        m |= (uint64_t)hit[i] << i;
    return m;
}

static uint64_t s_past(const float *x, float t, bool largest)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (__builtin_cpu_supports("avx512f"))
        return s_past_512(x, t, largest);
#endif
    return s_past_plain(x, t, largest);
}

/* s_topk_F32 for a contiguous row (inner 1) much longer than k: once the
 * first k are kept, each block of S_TOPK_BLOCK is compared whole with the
 * worst kept value, and only the elements past it (a bit mask: the worst
 * kept value only gets harder to beat, so those are all that can enter) are taken one
 * by one as s_topk_F32 does; the same pairs, in the same order. The tail
 * shorter than a block goes element by element. */
static void s_topk_f32(const void *xv, int64_t n, int64_t inner, int64_t k, bool largest,
                       void *vv, int64_t *idx)
{
    if (inner != 1 || k == 0 || n < 4 * k || n < 2 * S_TOPK_BLOCK) {
        s_topk_F32(xv, n, inner, k, largest, vv, idx);
        return;
    }
    const float *x = xv;
    float *v = vv;
    s_topk_F32(x, k, 1, k, largest, v, idx); /* the first k, best first */
    for (int64_t i = 0, j = k - 1; i < j; i++, j--) { /* worst first: a heap, worst on top */
        const float tv = v[i];
        const int64_t ti = idx[i];
        v[i] = v[j], idx[i] = idx[j];
        v[j] = tv, idx[j] = ti;
    }
    for (int64_t i = k; i < n;) {
        uint64_t m = n - i >= S_TOPK_BLOCK ? s_past(x + i, v[0], largest) : UINT64_MAX;
        const int64_t end = n - i < S_TOPK_BLOCK ? n : i + S_TOPK_BLOCK;
        for (; m; m &= m - 1) {
            const int64_t e = i + __builtin_ctzll(m);
            if (e >= end)
                break;
            if (s_better_F32(largest, x[e], e, v[0], idx[0])) {
                v[0] = x[e];
                idx[0] = e;
                s_sift_F32(largest, v, idx, 1, 0, k);
            }
        }
        i = end;
    }
    for (int64_t end = k - 1; end > 0; end--) {
        const float tv = v[0];
        const int64_t ti = idx[0];
        v[0] = v[end], idx[0] = idx[end];
        v[end] = tv, idx[end] = ti;
        s_sift_F32(largest, v, idx, 1, 0, end);
    }
}

/* Slices along axis: x as [outer, n, inner], outputs as [outer, k, inner];
 * a share is a range of the outer * inner slices. sorted=0 leaves the
 * order to us: it is sorted too. */
void gx_cpu_TOPK(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *yv = &k->out[0], *yi = &k->out[1];
    int axis = 0;
    gx_axis_norm(k->attr[GX_TOPK_AXIS].i, x->ndim, &axis);
    const int64_t n = x->shape[axis], kk = yv->shape[axis];
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const int64_t slices = gx_shape_numel(axis, x->shape, INT64_MAX) * inner;
    const bool largest = k->attr[GX_TOPK_LARGEST].i != 0;
    const s_topk_fn fn = x->dtype == GX_F32 ? s_topk_f32 : s_topk_tab[x->dtype];
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, slices, 1, &lo, &hi);
    for (int64_t s = lo; s < hi && kk > 0; s++) {
        const int64_t o = s / inner, c = s % inner;
        fn((const char *)x->data + (o * n * inner + c) * es, n, inner, kk, largest,
           (char *)yv->data + (o * kk * inner + c) * es, (int64_t *)yi->data + o * kk * inner + c);
    }
}
