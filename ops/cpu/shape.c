/*
 * Kernels of the ops that only move bytes, for any dtype: plain copies
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity), strided walks (Transpose,
 * Slice, Expand), chunked copies (Concat, Split, Tile) and the ops that
 * write their output from shapes or attributes (Shape, Size, Constant,
 * ConstantOfShape). Shares are byte or element ranges of the output on
 * cache-line boundaries; contiguous runs are memcpy'd. Gathers and scatters
 * are in ops/cpu/gather.c.
 */
#include <stdio.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/layout.h"
#include "ops/schema_shape.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S_X86 1
#endif

#define S_LINE_BYTES 64

static int64_t s_nbytes(const gx_view *v)
{
    return v->numel * (int64_t)gx_dtype_size(v->dtype);
}

/* Element strides of a contiguous tensor of v's shape. */
static void s_strides(const gx_view *v, int64_t *st)
{
    for (int64_t d = v->ndim - 1, s = 1; d >= 0; d--) {
        st[d] = s;
        s *= v->shape[d];
    }
}

/* This thread's share of an nbytes copy from src to dst. */
static void s_copy_share(const gx_kargs *k, void *dst, const void *src, int64_t nbytes)
{
    int64_t lo, hi;
    gx_cpu_share(k, nbytes, S_LINE_BYTES, &lo, &hi);
    if (lo < hi && dst != src)
        memcpy((char *)dst + lo, (const char *)src + lo, (size_t)(hi - lo));
}

void gx_cpu_RESHAPE(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

void gx_cpu_FLATTEN(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

void gx_cpu_SQUEEZE(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

void gx_cpu_UNSQUEEZE(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

void gx_cpu_IDENTITY(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

/* y[i] = x[i * step] for elements of one size; step may be 0 or negative. */
#define S_STRIDED(T)                                                          \
    static void s_strided_##T(int64_t n, int64_t step, T *restrict y, const T *restrict x) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = x[i * step];                                               \
    }
S_STRIDED(uint8_t)
S_STRIDED(uint16_t)
S_STRIDED(uint32_t)
S_STRIDED(uint64_t)

/* This thread's share of y, walked in order: output element at index i
 * comes from src + sum(i[d] * strides[d]) elements (strides of any sign, 0
 * to broadcast). Dims that stay adjacent merge (gx_nditer), so a run with
 * step 1 is one memcpy. */
static void s_strided_share(const gx_kargs *k, const gx_view *y, const char *src,
                            const int64_t *strides)
{
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi)
        return;
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){strides});
    gx_nditer_seek(&it, lo, hi);
    const int64_t step = it.step[0];
    char *py = y->data;
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        char *dst = py + r.y * es;
        const char *s = src + r.off[0] * es;
        if (step == 1) {
            memcpy(dst, s, (size_t)(r.n * es));
            continue;
        }
        switch (es) {
        case 1:
            s_strided_uint8_t(r.n, step, (uint8_t *)dst, (const uint8_t *)s);
            break;
        case 2:
            s_strided_uint16_t(r.n, step, (uint16_t *)dst, (const uint16_t *)s);
            break;
        case 4:
            s_strided_uint32_t(r.n, step, (uint32_t *)dst, (const uint32_t *)s);
            break;
        default:
            s_strided_uint64_t(r.n, step, (uint64_t *)dst, (const uint64_t *)s);
            break;
        }
    }
}

/* Transposes tiled by S_TILE x S_TILE elements: the tile's input lines and
 * output lines all stay in L1 while it is copied. */
#define S_TILE 16

/* One tile of a 2-D transpose: y[j * ys + l] = x[j + l * xs] for j < nj,
 * l < nl (rows of y along j, columns along l). */
#define S_TILE_COPY(T)                                                        \
    static void s_tile_##T(int64_t nj, int64_t nl, int64_t ys, int64_t xs, T *restrict y, \
                           const T *restrict x)                               \
    {                                                                         \
        for (int64_t j = 0; j < nj; j++)                                      \
            for (int64_t l = 0; l < nl; l++)                                  \
                y[j * ys + l] = x[j + l * xs];                                \
    }
S_TILE_COPY(uint8_t)
S_TILE_COPY(uint16_t)
S_TILE_COPY(uint32_t)
S_TILE_COPY(uint64_t)

#ifdef S_X86
_Static_assert(S_TILE == 16, "a 4-byte tile is 16 registers of 16 lanes");

/* A whole tile of 4-byte elements in registers: 16 rows loaded, three
 * rounds of interleaving (32-, 64-bit elements, 128-bit lanes twice), 16
 * rows stored. Bits are moved, never computed on. */
__attribute__((target("avx512f"))) static void s_tile16_avx512(int64_t ys, int64_t xs,
                                                                 uint32_t *y, const uint32_t *x)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(x + i * xs);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int h = 0; h < 2; h++) {
            const __m512d a = _mm512_castps_pd(t[i + h]), b = _mm512_castps_pd(t[i + h + 2]);
            r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        _mm512_storeu_ps(y + i * ys, _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88));
        _mm512_storeu_ps(y + (i + 8) * ys, _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd));
    }
}
#endif

/* One tile of 4-byte elements: whole tiles in registers where the CPU
 * has AVX-512. */
static void s_tile_4(int64_t nj, int64_t nl, int64_t ys, int64_t xs, uint32_t *y,
                     const uint32_t *x)
{
#ifdef S_X86
    if (nj == S_TILE && nl == S_TILE && __builtin_cpu_supports("avx512f")) {
        s_tile16_avx512(ys, xs, y, x);
        return;
    }
#endif
    s_tile_uint32_t(nj, nl, ys, xs, y, x);
}

/* A transpose whose output's innermost dim L is strided in the input, and
 * whose input's innermost dim is the output's dim J, walked tile by tile:
 * element by element, one of the two sides would touch a new cache line
 * per element (and with power-of-two strides evict its own lines). The
 * dims are the iterator's merged ones; a work unit is a band of S_TILE along J at one
 * index of the other dims, so units write disjoint output. */
static void s_transpose_tiled(const gx_kargs *k, const gx_nditer *it, int jd, const char *px,
                              char *py, int64_t es)
{
    const int nd = it->ndim, ld = nd - 1;
    int64_t ys[GX_MAX_DIMS];
    for (int64_t d = nd - 1, s = 1; d >= 0; d--) {
        ys[d] = s;
        s *= it->shape[d];
    }
    const int64_t nj = it->shape[jd], nl = it->shape[ld], xl = it->stride[0][ld];
    const int64_t bands = (nj + S_TILE - 1) / S_TILE;
    int64_t units = bands, lo, hi;
    for (int d = 0; d < ld; d++)
        units *= d == jd ? 1 : it->shape[d];
    gx_cpu_share(k, units, 1, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t rest = u / bands, xo = 0, yo = 0;
        const int64_t j0 = u % bands * S_TILE, nt = nj - j0 < S_TILE ? nj - j0 : S_TILE;
        for (int d = ld - 1; d >= 0; d--) {
            if (d == jd)
                continue;
            const int64_t i = rest % it->shape[d];
            rest /= it->shape[d];
            xo += i * it->stride[0][d];
            yo += i * ys[d];
        }
        xo += j0;
        yo += j0 * ys[jd];
        for (int64_t l0 = 0; l0 < nl; l0 += S_TILE) {
            const int64_t nt_l = nl - l0 < S_TILE ? nl - l0 : S_TILE;
            char *dst = py + (yo + l0) * es;
            const char *src = px + (xo + l0 * xl) * es;
            switch (es) {
            case 1:
                s_tile_uint8_t(nt, nt_l, ys[jd], xl, (uint8_t *)dst, (const uint8_t *)src);
                break;
            case 2:
                s_tile_uint16_t(nt, nt_l, ys[jd], xl, (uint16_t *)dst, (const uint16_t *)src);
                break;
            case 4:
                s_tile_4(nt, nt_l, ys[jd], xl, (uint32_t *)dst, (const uint32_t *)src);
                break;
            default:
                s_tile_uint64_t(nt, nt_l, ys[jd], xl, (uint64_t *)dst, (const uint64_t *)src);
                break;
            }
        }
    }
}

/* Transpose: the input's strides, permuted into the output's order; tiled
 * when the innermost dims of input and output differ and both are long
 * enough for tiles to pay. */
void gx_cpu_TRANSPOSE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_attrval *p = &k->attr[GX_TRANSPOSE_PERM];
    int64_t xs[GX_MAX_DIMS], ps[GX_MAX_DIMS];
    s_strides(x, xs);
    for (int i = 0; i < x->ndim; i++)
        ps[i] = xs[p->set ? p->ints[i] : x->ndim - 1 - i];
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){ps});
    int jd = -1;
    for (int d = 0; d < it.ndim - 1; d++)
        jd = it.stride[0][d] == 1 ? d : jd;
    const int last = it.ndim - 1;
    if (jd >= 0 && it.shape[jd] >= S_TILE / 4 && it.shape[last] >= S_TILE / 4)
        s_transpose_tiled(k, &it, jd, x->data, y->data, (int64_t)gx_dtype_size(x->dtype));
    else
        s_strided_share(k, y, x->data, ps);
}

/* Slice: from the first element taken, each dim advances step input
 * elements. Dims with one element or none never advance, and their stride
 * (which may overflow for a huge step) is left 0. */
void gx_cpu_SLICE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    gx_infer ic = {.attr = k->attr, .n_in = k->n_in, .in = k->in};
    gx_slice_plan p;
    gx_slice_resolve(&ic, &p); /* infer accepted these arguments */
    int64_t xs[GX_MAX_DIMS], st[GX_MAX_DIMS], base = 0;
    s_strides(x, xs);
    for (int d = 0; d < x->ndim; d++) {
        base += p.start[d] * xs[d];
        st[d] = p.count[d] > 1 ? p.step[d] * xs[d] : 0;
    }
    s_strided_share(k, &k->out[0], (const char *)x->data + base * (int64_t)gx_dtype_size(x->dtype),
                    st);
}

/* Expand: numpy broadcasting, a stride of 0 along broadcast dims. */
void gx_cpu_EXPAND(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t st[GX_MAX_DIMS];
    gx_bcast_strides(y->ndim, x->ndim, x->shape, st);
    s_strided_share(k, y, x->data, st);
}

/* Concat: each outer row of y (dims before axis) is the inputs' rows one
 * after another; a share is a byte range of y, cut from those chunks. */
void gx_cpu_CONCAT(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    int axis = 0;
    gx_axis_norm(k->attr[GX_CONCAT_AXIS].i, y->ndim, &axis);
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    const int64_t outer = gx_shape_numel(axis, y->shape, INT64_MAX);
    const int64_t inner =
        gx_shape_numel(y->ndim - axis - 1, y->shape + axis + 1, INT64_MAX) * es;
    const int64_t row = y->shape[axis] * inner;
    int64_t lo, hi;
    gx_cpu_share(k, outer * row, S_LINE_BYTES, &lo, &hi);
    if (lo >= hi)
        return;
    char *py = y->data;
    for (int64_t o = lo / row; o < outer && o * row < hi; o++) {
        int64_t at = o * row; /* where input i's chunk of this row starts in y */
        for (int i = 0; i < k->n_in; i++) {
            const int64_t chunk = k->in[i].shape[axis] * inner;
            const int64_t s = at > lo ? at : lo, e = at + chunk < hi ? at + chunk : hi;
            const char *src = (const char *)k->in[i].data + o * chunk + (s - at);
            if (s < e && src != py + s) /* (an input the memory plan put in place) */
                memcpy(py + s, src, (size_t)(e - s));
            at += chunk;
        }
    }
}

/* Concat in NHWC or NCHW16c: the same concatenation along the physical
 * axis that holds the logical one (channels: NHWC's last, NCHW16c's
 * blocks, every input's channels a multiple of 16 there), by the plain
 * kernel on the physical views. */
static void s_concat_layout(const gx_kargs *k)
{
    static const int phys[2][4] = {{0, 3, 1, 2}, {0, 1, 2, 3}}; /* NHWC, NCHW16c */
    gx_attrval attr[GX_CONCAT_NATTRS];
    memcpy(attr, k->attr, sizeof attr);
    int axis = 0;
    gx_axis_norm(attr[GX_CONCAT_AXIS].i, 4, &axis);
    attr[GX_CONCAT_AXIS].i = phys[k->out[0].layout == GX_LAYOUT_NCHW16C][axis];
    gx_kargs pk = *k;
    pk.attr = attr;
    gx_cpu_CONCAT(&pk);
}

gx_kernel_fn gx_cpu_concat_layout(gx_layout l, const gx_infer *ic, char *why, size_t len)
{
    const char *ln = gx_layout_name(l);
    if (l != GX_LAYOUT_NHWC && l != GX_LAYOUT_NCHW16C) {
        snprintf(why, len, "%s: no Concat kernel", ln);
        return NULL;
    }
    for (int i = 0; i < ic->n_in; i++) {
        if (!gx_layout_fits(l, &ic->in[i])) {
            snprintf(why, len, "%s: Concat of a %d-D %s [.., %lld, ..] input", ln, ic->in[i].ndim,
                     gx_dtype_name(ic->in[i].dtype),
                     (long long)(ic->in[i].ndim > 1 ? ic->in[i].shape[1] : 0));
            return NULL;
        }
    }
    return s_concat_layout;
}

gx_kernel_fn gx_cpu_concat_layout_fn(void)
{
    return s_concat_layout;
}

/* Split: Concat the other way round; a share is a byte range of the input,
 * each outer row cut into the outputs' chunks. */
void gx_cpu_SPLIT(const gx_kargs *k)
{
    const gx_view *x = &k->in[0];
    int axis = 0;
    gx_axis_norm(k->attr[GX_SPLIT_AXIS].i, x->ndim, &axis);
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    const int64_t outer = gx_shape_numel(axis, x->shape, INT64_MAX);
    const int64_t inner =
        gx_shape_numel(x->ndim - axis - 1, x->shape + axis + 1, INT64_MAX) * es;
    const int64_t row = x->shape[axis] * inner;
    int64_t lo, hi;
    gx_cpu_share(k, outer * row, S_LINE_BYTES, &lo, &hi);
    if (lo >= hi)
        return;
    const char *px = x->data;
    for (int64_t o = lo / row; o < outer && o * row < hi; o++) {
        int64_t at = o * row; /* where output i's chunk of this row starts in x */
        for (int i = 0; i < k->n_out; i++) {
            const int64_t chunk = k->out[i].shape[axis] * inner;
            const int64_t s = at > lo ? at : lo, e = at + chunk < hi ? at + chunk : hi;
            if (s < e)
                memcpy((char *)k->out[i].data + o * chunk + (s - at), px + s, (size_t)(e - s));
            at += chunk;
        }
    }
}

/* Tile: output row r (all dims but the last) repeats input row r mod the
 * input's dims; along the last dim the input row comes round again every
 * x.shape[-1] elements. A share is an element range of y. */
void gx_cpu_TILE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    const int nd = y->ndim;
    const int64_t xn = nd ? x->shape[nd - 1] : 1, yn = nd ? y->shape[nd - 1] : 1;
    int64_t xs[GX_MAX_DIMS], lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi)
        return;
    s_strides(x, xs);
    const char *px = x->data;
    char *py = y->data;
    for (int64_t pos = lo; pos < hi;) {
        int64_t row = pos / yn, col = pos % yn, off = 0;
        for (int d = nd - 2; d >= 0; d--) {
            off += row % y->shape[d] % x->shape[d] * xs[d];
            row /= y->shape[d];
        }
        const int64_t end = hi < pos - col + yn ? hi : pos - col + yn;
        while (pos < end) {
            const int64_t c = col % xn, n = xn - c < end - pos ? xn - c : end - pos;
            memcpy(py + pos * es, px + (off + c) * es, (size_t)(n * es));
            pos += n;
            col += n;
        }
    }
}

/* Shape: dims [start, end) of the input (see the schema) as int64. */
void gx_cpu_SHAPE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t s, e, lo, hi;
    gx_shape_range(k->attr, x->ndim, &s, &e);
    gx_cpu_share(k, e - s, S_LINE_BYTES / 8, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        ((int64_t *)y->data)[i] = x->shape[s + i];
}

void gx_cpu_SIZE(const gx_kargs *k)
{
    int64_t lo, hi;
    gx_cpu_share(k, 1, 1, &lo, &hi);
    if (lo < hi)
        *(int64_t *)k->out[0].data = gx_view_numel(&k->in[0]);
}

/* Constant: the tensor's bytes, or the float/int attributes converted to
 * float32/int64. */
void gx_cpu_CONSTANT(const gx_kargs *k)
{
    const gx_attrval *a = k->attr;
    const gx_view *y = &k->out[0];
    int64_t lo, hi;
    if (a[GX_CONSTANT_VALUE].set) {
        s_copy_share(k, y->data, a[GX_CONSTANT_VALUE].t->data, s_nbytes(y));
        return;
    }
    gx_cpu_share(k, y->numel, S_LINE_BYTES / 4, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        if (a[GX_CONSTANT_VALUE_FLOAT].set)
            ((float *)y->data)[i] = (float)a[GX_CONSTANT_VALUE_FLOAT].f;
        else if (a[GX_CONSTANT_VALUE_FLOATS].set)
            ((float *)y->data)[i] = (float)a[GX_CONSTANT_VALUE_FLOATS].floats[i];
        else if (a[GX_CONSTANT_VALUE_INT].set)
            ((int64_t *)y->data)[i] = a[GX_CONSTANT_VALUE_INT].i;
        else
            ((int64_t *)y->data)[i] = a[GX_CONSTANT_VALUE_INTS].ints[i];
    }
}

/* y[0..n) = v for elements of one size. */
#define S_FILL(T)                                                             \
    static void s_fill_##T(int64_t n, T *restrict y, const void *v)           \
    {                                                                         \
        T t;                                                                  \
        memcpy(&t, v, sizeof t);                                              \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = t;                                                         \
    }
S_FILL(uint8_t)
S_FILL(uint16_t)
S_FILL(uint32_t)
S_FILL(uint64_t)

/* ConstantOfShape: every element is the value tensor's one element (or a
 * float32 0, all zero bytes). */
void gx_cpu_CONSTANT_OF_SHAPE(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const gx_tensor *t = k->attr[GX_CONSTANT_OF_SHAPE_VALUE].t;
    const int64_t es = (int64_t)gx_dtype_size(y->dtype);
    static const uint64_t zero = 0;
    const void *v = t ? t->data : &zero;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi)
        return;
    char *dst = (char *)y->data + lo * es;
    switch (es) {
    case 1:
        s_fill_uint8_t(hi - lo, (uint8_t *)dst, v);
        break;
    case 2:
        s_fill_uint16_t(hi - lo, (uint16_t *)dst, v);
        break;
    case 4:
        s_fill_uint32_t(hi - lo, (uint32_t *)dst, v);
        break;
    default:
        s_fill_uint64_t(hi - lo, (uint64_t *)dst, v);
        break;
    }
}
