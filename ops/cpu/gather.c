/*
 * Kernels of the ops that read or write through an index tensor: Gather,
 * GatherElements, GatherND, ScatterElements, Scatter, ScatterND,
 * ReverseSequence (which indexes by sequence length) and TensorScatter
 * (which writes at a position per sample).
 *
 * Out-of-range indices. Infer refuses them whenever it sees their values
 * (constants, and every input of a node that runs its infer at run time),
 * but a kernel cannot fail, so it stays in bounds by itself:
 *   - a gather whose index lies outside [-dim, dim) writes zero bytes for
 *     what it would have read;
 *   - a scatter skips an update whose index lies outside [-dim, dim);
 *   - ReverseSequence clamps each sequence length into [0, time dim];
 *   - TensorScatter drops update rows that would land outside the cache.
 *
 * Gathers share the output by byte or element ranges. A scatter's thread
 * copies its range of data to the output, then walks every update in order
 * and applies those landing in its range: no two threads write one byte,
 * and duplicate indices combine in index order as the spec's loop does.
 */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/schema_shape.h"

#define S_LINE_BYTES 64

static int64_t s_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Element strides of a contiguous tensor of v's shape. */
static void s_strides(const gx_view *v, int64_t *st)
{
    for (int64_t d = v->ndim - 1, s = 1; d >= 0; d--) {
        st[d] = s;
        s *= v->shape[d];
    }
}

/* Index j of a dim of n, negative counting from the end; -1 if out of
 * range. */
static int64_t s_wrap(int64_t j, int64_t n)
{
    j = j < 0 ? j + n : j;
    return j >= 0 && j < n ? j : -1;
}

/* ---- gathers: whole blocks from computed places ---- */

/* Where block b of the output comes from; NULL for zeros. */
typedef const char *(*s_block_src)(const void *ctx, int64_t b);

/* This thread's share of y, seen as blocks of `block` bytes, each copied
 * from where src says (a share may start or end inside a block). */
static void s_blocks_share(const gx_kargs *k, const gx_view *y, int64_t block, s_block_src src,
                           const void *ctx)
{
    const int64_t nbytes = y->numel * (int64_t)gx_dtype_size(y->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, nbytes, S_LINE_BYTES, &lo, &hi);
    if (lo >= hi || block == 0)
        return;
    char *py = y->data;
    for (int64_t b = lo / block; b * block < hi; b++) {
        const int64_t at = b * block, s = at > lo ? at : lo, e = s_min(at + block, hi);
        const char *from = src(ctx, b);
        if (from)
            memcpy(py + s, from + (s - at), (size_t)(e - s));
        else
            memset(py + s, 0, (size_t)(e - s));
    }
}

/* Gather as blocks: data [outer, n, inner bytes], output block b = (o, j)
 * is data[o, indices[j]]. */
typedef struct s_gather_ctx {
    const char *x;
    const gx_view *ind;
    int64_t n, nidx, inner;
} s_gather_ctx;

static const char *s_gather_src(const void *ctx, int64_t b)
{
    const s_gather_ctx *c = ctx;
    const int64_t o = b / c->nidx, j = s_wrap(gx_index_at(c->ind, b % c->nidx), c->n);
    return j < 0 ? NULL : c->x + (o * c->n + j) * c->inner;
}

/* out[o][j] = x[o][wrap(ind[j])] for single elements of one size: the
 * innermost-axis case, where blocks of one element would cost a memcpy
 * call each. */
#define S_TAKE(T)                                                             \
    static void s_take_##T(int64_t lo, int64_t hi, const s_gather_ctx *c, T *restrict y) \
    {                                                                         \
        const T *row = (const T *)c->x + lo / c->nidx * c->n;                 \
        for (int64_t b = lo, i = lo % c->nidx; b < hi; b++) {                 \
            const int64_t j = s_wrap(gx_index_at(c->ind, i), c->n);           \
            y[b] = j < 0 ? 0 : row[j];                                        \
            if (++i == c->nidx) {                                             \
                i = 0;                                                        \
                row += c->n;                                                  \
            }                                                                 \
        }                                                                     \
    }
S_TAKE(uint8_t)
S_TAKE(uint16_t)
S_TAKE(uint32_t)
S_TAKE(uint64_t)

void gx_cpu_GATHER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int axis = 0;
    gx_axis_norm(k->attr[GX_GATHER_AXIS].i, x->ndim, &axis);
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    const int64_t inner = gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX);
    const s_gather_ctx c = {.x = x->data, .ind = &k->in[1], .n = x->shape[axis],
                            .nidx = k->in[1].numel, .inner = inner * es};
    if (inner != 1) {
        s_blocks_share(k, y, c.inner, s_gather_src, &c);
        return;
    }
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi) /* also when there are no indices: nidx may be 0 */
        return;
    switch (es) {
    case 1:
        s_take_uint8_t(lo, hi, &c, y->data);
        break;
    case 2:
        s_take_uint16_t(lo, hi, &c, y->data);
        break;
    case 4:
        s_take_uint32_t(lo, hi, &c, y->data);
        break;
    default:
        s_take_uint64_t(lo, hi, &c, y->data);
        break;
    }
}

/* GatherND as blocks: tuple t (k indices) of batch t / per_batch picks a
 * slice of `block` bytes. */
typedef struct s_gather_nd_ctx {
    const char *x;
    const gx_view *ind;
    const int64_t *dims;    /* data dims the tuple indexes (k of them) */
    const int64_t *strides; /* their element strides */
    int k;
    int64_t per_batch, batch_elems, es;
} s_gather_nd_ctx;

static const char *s_gather_nd_src(const void *ctx, int64_t t)
{
    const s_gather_nd_ctx *c = ctx;
    int64_t off = t / c->per_batch * c->batch_elems;
    for (int j = 0; j < c->k; j++) {
        const int64_t v = s_wrap(gx_index_at(c->ind, t * c->k + j), c->dims[j]);
        if (v < 0)
            return NULL;
        off += v * c->strides[j];
    }
    return c->x + off * c->es;
}

void gx_cpu_GATHER_ND(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *ind = &k->in[1], *y = &k->out[0];
    const int b = (int)k->attr[GX_GATHER_ND_BATCH_DIMS].i;
    const int kk = (int)ind->shape[ind->ndim - 1];
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t xs[GX_MAX_DIMS];
    s_strides(x, xs);
    const int64_t batches = gx_shape_numel(b, x->shape, INT64_MAX);
    const int64_t tuples = ind->numel / kk;
    const int64_t slice = gx_shape_numel(x->ndim - b - kk, x->shape + b + kk, INT64_MAX);
    if (batches == 0 || tuples == 0)
        return;
    const s_gather_nd_ctx c = {.x = x->data, .ind = ind, .dims = x->shape + b,
                               .strides = xs + b, .k = kk, .per_batch = tuples / batches,
                               .batch_elems = b > 0 ? xs[b - 1] : 0, .es = es};
    s_blocks_share(k, y, slice * es, s_gather_nd_src, &c);
}

/* ReverseSequence as blocks: the input seen as [d0, d1, inner bytes];
 * block (i0, i1) reads time step len - 1 - t for t < len of its batch. */
typedef struct s_revseq_ctx {
    const char *x;
    const int64_t *lens;
    int time_axis;
    int64_t d1, steps, inner;
} s_revseq_ctx;

static const char *s_revseq_src(const void *ctx, int64_t blk)
{
    const s_revseq_ctx *c = ctx;
    int64_t i0 = blk / c->d1, i1 = blk % c->d1;
    int64_t *t = c->time_axis == 0 ? &i0 : &i1;
    int64_t len = c->lens[c->time_axis == 0 ? i1 : i0];
    len = len < 0 ? 0 : s_min(len, c->steps);
    if (*t < len)
        *t = len - 1 - *t;
    return c->x + (i0 * c->d1 + i1) * c->inner;
}

void gx_cpu_REVERSE_SEQUENCE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    const int ta = (int)k->attr[GX_REVERSE_SEQUENCE_TIME_AXIS].i;
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    const s_revseq_ctx c = {.x = x->data, .lens = k->in[1].data, .time_axis = ta,
                            .d1 = x->shape[1], .steps = x->shape[ta],
                            .inner = gx_shape_numel(x->ndim - 2, x->shape + 2, INT64_MAX) * es};
    s_blocks_share(k, &k->out[0], c.inner, s_revseq_src, &c);
}

/* GatherElements: y[i] = x[i with the axis coordinate ind[i]]. The output
 * walk (gx_nditer over the indices' shape) tracks x's offset without the
 * axis coordinate; the index adds it. */
#define S_GATHER_ELEMS(T)                                                     \
    static void s_gather_elems_##T(gx_nditer *it, const gx_view *ind, int64_t n, int64_t sa, \
                                   const T *restrict x, T *restrict y)        \
    {                                                                         \
        const int64_t step = it->step[0];                                     \
        gx_nditer_run r;                                                      \
        while (gx_nditer_next(it, &r)) {                                      \
            for (int64_t t = 0; t < r.n; t++) {                               \
                const int64_t j = s_wrap(gx_index_at(ind, r.y + t), n);       \
                y[r.y + t] = j < 0 ? 0 : x[r.off[0] + t * step + j * sa];     \
            }                                                                 \
        }                                                                     \
    }
S_GATHER_ELEMS(uint8_t)
S_GATHER_ELEMS(uint16_t)
S_GATHER_ELEMS(uint32_t)
S_GATHER_ELEMS(uint64_t)

void gx_cpu_GATHER_ELEMENTS(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *ind = &k->in[1], *y = &k->out[0];
    int axis = 0;
    gx_axis_norm(k->attr[GX_GATHER_ELEMENTS_AXIS].i, x->ndim, &axis);
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t xs[GX_MAX_DIMS], st[GX_MAX_DIMS], lo, hi;
    s_strides(x, xs);
    memcpy(st, xs, sizeof st);
    st[axis] = 0;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi)
        return;
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){st});
    gx_nditer_seek(&it, lo, hi);
    const int64_t n = x->shape[axis], sa = xs[axis];
    switch (es) {
    case 1:
        s_gather_elems_uint8_t(&it, ind, n, sa, x->data, y->data);
        break;
    case 2:
        s_gather_elems_uint16_t(&it, ind, n, sa, x->data, y->data);
        break;
    case 4:
        s_gather_elems_uint32_t(&it, ind, n, sa, x->data, y->data);
        break;
    default:
        s_gather_elems_uint64_t(&it, ind, n, sa, x->data, y->data);
        break;
    }
}

/* ---- scatters ---- */

/* Combines n updates src into dst, elementwise. */
typedef void (*s_combine_fn)(void *restrict dst, const void *restrict src, int64_t n);

#define S_SAME(v) (v)
#define S_NO_NAN(v) ((void)(v), 0)

/* add, mul, max, min for one dtype: T is the storage type, V what LOAD
 * turns it into, U the type add and mul compute in (unsigned for integers,
 * so they wrap instead of overflowing), STORE V back to T. max and min
 * propagate NaN, as numpy's maximum and minimum do. */
#define S_COMBINERS(NAME, T, V, U, LOAD, STORE, ISNAN)                        \
    static void s_add_##NAME(void *restrict d, const void *restrict s, int64_t n) \
    {                                                                         \
        T *y = d;                                                             \
        const T *x = s;                                                       \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = STORE((V)((U)LOAD(y[i]) + (U)LOAD(x[i])));                 \
    }                                                                         \
    static void s_mul_##NAME(void *restrict d, const void *restrict s, int64_t n) \
    {                                                                         \
        T *y = d;                                                             \
        const T *x = s;                                                       \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = STORE((V)((U)LOAD(y[i]) * (U)LOAD(x[i])));                 \
    }                                                                         \
    static void s_max_##NAME(void *restrict d, const void *restrict s, int64_t n) \
    {                                                                         \
        T *y = d;                                                             \
        const T *x = s;                                                       \
        for (int64_t i = 0; i < n; i++) {                                     \
            const V a = LOAD(y[i]), b = LOAD(x[i]);                           \
            y[i] = STORE(a >= b || ISNAN(a) ? a : b);                         \
        }                                                                     \
    }                                                                         \
    static void s_min_##NAME(void *restrict d, const void *restrict s, int64_t n) \
    {                                                                         \
        T *y = d;                                                             \
        const T *x = s;                                                       \
        for (int64_t i = 0; i < n; i++) {                                     \
            const V a = LOAD(y[i]), b = LOAD(x[i]);                           \
            y[i] = STORE(a <= b || ISNAN(a) ? a : b);                         \
        }                                                                     \
    }

S_COMBINERS(f32, float, float, float, S_SAME, S_SAME, isnan)
S_COMBINERS(f64, double, double, double, S_SAME, S_SAME, isnan)
S_COMBINERS(f16, uint16_t, float, float, gx_f16_to_f32, gx_f32_to_f16, isnan)
S_COMBINERS(bf16, uint16_t, float, float, gx_bf16_to_f32, gx_f32_to_bf16, isnan)
S_COMBINERS(i8, int8_t, int8_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(i16, int16_t, int16_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(i32, int32_t, int32_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(i64, int64_t, int64_t, uint64_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(u8, uint8_t, uint8_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(u16, uint16_t, uint16_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(u32, uint32_t, uint32_t, uint32_t, S_SAME, S_SAME, S_NO_NAN)
S_COMBINERS(u64, uint64_t, uint64_t, uint64_t, S_SAME, S_SAME, S_NO_NAN)

#define S_ROW(NAME) {s_add_##NAME, s_mul_##NAME, s_max_##NAME, s_min_##NAME}

/* The combiners by dtype, in gx_scatter_red order from GX_SCATTER_ADD.
 * bool has none: infer refuses reductions on it. */
static const s_combine_fn s_combiners[GX_DTYPE_COUNT][4] = {
    [GX_F32] = S_ROW(f32), [GX_F64] = S_ROW(f64), [GX_F16] = S_ROW(f16),
    [GX_BF16] = S_ROW(bf16), [GX_I8] = S_ROW(i8), [GX_I16] = S_ROW(i16),
    [GX_I32] = S_ROW(i32), [GX_I64] = S_ROW(i64), [GX_U8] = S_ROW(u8),
    [GX_U16] = S_ROW(u16), [GX_U32] = S_ROW(u32), [GX_U64] = S_ROW(u64),
};

/* A scatter's plain write: one copy per size, so the element size is a
 * constant the compiler can use. */
#define S_ASSIGN(T)                                                           \
    static void s_assign_##T(void *restrict d, const void *restrict s, int64_t n) \
    {                                                                         \
        memcpy(d, s, (size_t)n * sizeof(T));                                  \
    }
S_ASSIGN(uint8_t)
S_ASSIGN(uint16_t)
S_ASSIGN(uint32_t)
S_ASSIGN(uint64_t)

static s_combine_fn s_combiner(gx_dtype dt, const char *reduction)
{
    gx_scatter_red red = GX_SCATTER_NONE;
    gx_scatter_red_parse(reduction, &red); /* infer accepted it */
    if (red != GX_SCATTER_NONE)
        return s_combiners[dt][red - GX_SCATTER_ADD];
    switch (gx_dtype_size(dt)) {
    case 1:
        return s_assign_uint8_t;
    case 2:
        return s_assign_uint16_t;
    case 4:
        return s_assign_uint32_t;
    default:
        return s_assign_uint64_t;
    }
}

/* This thread's element range [*lo, *hi) of the output, with data's values
 * copied into it. */
static void s_scatter_start(const gx_kargs *k, int64_t *lo, int64_t *hi)
{
    const gx_view *y = &k->out[0];
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, lo, hi);
    if (*lo < *hi)
        memcpy((char *)y->data + *lo * es, (const char *)k->in[0].data + *lo * es,
               (size_t)((*hi - *lo) * es));
}

/* ScatterElements and Scatter: update j goes to j's position with the axis
 * coordinate replaced by indices[j]. */
static void s_scatter_elements(const gx_kargs *k, int64_t axis_attr, const char *reduction)
{
    const gx_view *x = &k->in[0], *ind = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    int axis = 0;
    gx_axis_norm(axis_attr, x->ndim, &axis);
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t lo, hi;
    s_scatter_start(k, &lo, &hi);
    if (lo >= hi || ind->numel == 0)
        return;
    const s_combine_fn combine = s_combiner(x->dtype, reduction);
    int64_t xs[GX_MAX_DIMS], st[GX_MAX_DIMS];
    s_strides(x, xs);
    memcpy(st, xs, sizeof st);
    st[axis] = 0;
    gx_nditer it;
    gx_nditer_init(&it, ind->ndim, ind->shape, 1, (const int64_t *const[]){st});
    gx_nditer_seek(&it, 0, ind->numel);
    const int64_t n = x->shape[axis], sa = xs[axis], step = it.step[0];
    char *py = y->data;
    const char *pu = u->data;
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        for (int64_t t = 0; t < r.n; t++) {
            const int64_t j = s_wrap(gx_index_at(ind, r.y + t), n);
            const int64_t at = r.off[0] + t * step + j * sa;
            if (j >= 0 && at >= lo && at < hi)
                combine(py + at * es, pu + (r.y + t) * es, 1);
        }
    }
}

void gx_cpu_SCATTER_ELEMENTS(const gx_kargs *k)
{
    s_scatter_elements(k, k->attr[GX_SCATTER_ELEMENTS_AXIS].i,
                       k->attr[GX_SCATTER_ELEMENTS_REDUCTION].s);
}

void gx_cpu_SCATTER(const gx_kargs *k)
{
    s_scatter_elements(k, k->attr[GX_SCATTER_AXIS].i, "none");
}

/* ScatterND: tuple t (k indices) names a contiguous slice of the output;
 * the part of it inside this thread's range takes the matching part of
 * updates slice t. */
void gx_cpu_SCATTER_ND(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *ind = &k->in[1], *y = &k->out[0];
    const int kk = (int)ind->shape[ind->ndim - 1];
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t lo, hi;
    s_scatter_start(k, &lo, &hi);
    if (lo >= hi)
        return;
    const s_combine_fn combine = s_combiner(x->dtype, k->attr[GX_SCATTER_ND_REDUCTION].s);
    int64_t xs[GX_MAX_DIMS];
    s_strides(x, xs);
    const int64_t tuples = ind->numel / kk;
    const int64_t slice = gx_shape_numel(x->ndim - kk, x->shape + kk, INT64_MAX);
    char *py = y->data;
    const char *pu = k->in[2].data;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0;
        for (int j = 0; j < kk && off >= 0; j++) {
            const int64_t v = s_wrap(gx_index_at(ind, t * kk + j), x->shape[j]);
            off = v < 0 ? -1 : off + v * xs[j];
        }
        const int64_t s = off > lo ? off : lo, e = s_min(off + slice, hi);
        if (off >= 0 && s < e)
            combine(py + s * es, pu + (t * slice + s - off) * es, e - s);
    }
}

/* ---- TensorScatter ---- */

/* The output as [outer, max_seq, inner] around the axis; a share is a
 * range of its (outer, position) rows, each copied from the one row that
 * lands there: update row s where position t = w + s (linear) or
 * (w + s) mod max_seq (circular) for the sample's write index w, else the
 * past_cache row. update is no longer than the cache along the axis, so
 * at most one update row lands on a position. */
void gx_cpu_TENSOR_SCATTER(const gx_kargs *k)
{
    const gx_view *past = &k->in[0], *up = &k->in[1], *y = &k->out[0];
    int axis = 1;
    gx_axis_norm(k->attr[GX_TENSOR_SCATTER_AXIS].i, past->ndim, &axis);
    const bool circular = k->attr[GX_TENSOR_SCATTER_MODE].s[0] == 'c';
    const bool has_w = k->n_in > 2 && k->in[2].ndim >= 0;
    const int64_t *wi = has_w ? k->in[2].data : NULL;
    const size_t es = gx_dtype_size(past->dtype);
    const int64_t max = past->shape[axis], len = up->shape[axis];
    const int64_t inner = gx_shape_numel(past->ndim - axis - 1, past->shape + axis + 1, INT64_MAX);
    const int64_t per_sample = gx_shape_numel(axis - 1, past->shape + 1, INT64_MAX);
    const int64_t rows = gx_shape_numel(axis, past->shape, INT64_MAX) * max;
    const size_t rb = (size_t)inner * es;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t o = r / max, t = r % max;
        const int64_t w = wi ? wi[o / per_sample] : 0;
        int64_t s = t - w;
        if (circular && max > 0) {
            s %= max;
            s = s < 0 ? s + max : s;
        }
        const bool from_update = s >= 0 && s < len && (circular || w >= 0);
        const char *src = from_update ? (const char *)up->data + (size_t)(o * len + s) * rb
                                      : (const char *)past->data + (size_t)r * rb;
        memcpy((char *)y->data + (size_t)r * rb, src, rb);
    }
}
