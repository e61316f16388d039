/*
 * Kernels of the ops that only move bytes, for any dtype: Reshape and
 * Identity (a copy), Transpose (a strided gather) and Concat (copies of
 * contiguous chunks). Shares are byte or element ranges of the output on
 * cache-line boundaries.
 */
#include <string.h>

#include "ops/cpu/cpu.h"

#define S_LINE_BYTES 64

static int64_t s_nbytes(const gx_view *v)
{
    return v->numel * (int64_t)gx_dtype_size(v->dtype);
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

void gx_cpu_IDENTITY(const gx_kargs *k)
{
    s_copy_share(k, k->out[0].data, k->in[0].data, s_nbytes(&k->out[0]));
}

/* y[i] = x[i * step] for elements of one size. */
#define S_GATHER(T)                                                           \
    static void s_gather_##T(int64_t n, int64_t step, T *restrict y, const T *restrict x) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = x[i * step];                                               \
    }
S_GATHER(uint8_t)
S_GATHER(uint16_t)
S_GATHER(uint32_t)
S_GATHER(uint64_t)

/* Transpose: walk the output in order; the input's strides, permuted, tell
 * where each element comes from. Dims that stay adjacent merge (gx_nditer),
 * so a run with step 1 is a memcpy. */
void gx_cpu_TRANSPOSE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_attrval *p = &k->attr[GX_TRANSPOSE_PERM];
    const int64_t es = (int64_t)gx_dtype_size(x->dtype);
    int64_t xs[GX_MAX_DIMS], ps[GX_MAX_DIMS];
    for (int64_t d = x->ndim - 1, s = 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->shape[d];
    }
    for (int i = 0; i < x->ndim; i++)
        ps[i] = xs[p->set ? p->ints[i] : x->ndim - 1 - i];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / es, &lo, &hi);
    if (lo >= hi)
        return;
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){ps});
    gx_nditer_seek(&it, lo, hi);
    const int64_t step = it.step[0];
    const char *px = x->data;
    char *py = y->data;
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        char *dst = py + r.y * es;
        const char *src = px + r.off[0] * es;
        if (step == 1) {
            memcpy(dst, src, (size_t)(r.n * es));
            continue;
        }
        switch (es) {
        case 1:
            s_gather_uint8_t(r.n, step, (uint8_t *)dst, (const uint8_t *)src);
            break;
        case 2:
            s_gather_uint16_t(r.n, step, (uint16_t *)dst, (const uint16_t *)src);
            break;
        case 4:
            s_gather_uint32_t(r.n, step, (uint32_t *)dst, (const uint32_t *)src);
            break;
        case 8:
            s_gather_uint64_t(r.n, step, (uint64_t *)dst, (const uint64_t *)src);
            break;
        default:
            for (int64_t i = 0; i < r.n; i++)
                memcpy(dst + i * es, src + i * step * es, (size_t)es);
            break;
        }
    }
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
            if (s < e)
                memcpy(py + s, (const char *)k->in[i].data + o * chunk + (s - at),
                       (size_t)(e - s));
            at += chunk;
        }
    }
}
