/*
 * DepthToSpace and SpaceToDepth on the CPU, any dtype: both are a
 * reshape to 6-D, a transpose and a reshape back. SpaceToDepth is one
 * strided gather: the output seen as 6-D is walked in order, the input's
 * strides, permuted, say where each element comes from, and a share is an
 * element range of the output on cache-line boundaries. DepthToSpace's
 * innermost output dim (of size blocksize) would make runs of a few
 * elements that way; each of its output rows instead interleaves
 * blocksize input rows, and a share is a range of output rows.
 */
#include <string.h>

#include "ops/cpu/cpu.h"

#define S_LINE_BYTES 64

/* y (shape[6], contiguous) gathered from x through the strides xs. */
static void s_gather6(const gx_kargs *k, const int64_t *shape, const int64_t *xs)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const size_t es = gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, S_LINE_BYTES / (int64_t)es, &lo, &hi);
    if (lo >= hi)
        return;
    gx_nditer it;
    gx_nditer_init(&it, 6, shape, 1, (const int64_t *const[]){xs});
    gx_nditer_seek(&it, lo, hi);
    const int64_t step = it.step[0];
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        char *dst = (char *)y->data + (size_t)r.y * es;
        const char *src = (const char *)x->data + (size_t)r.off[0] * es;
        if (step == 1) {
            memcpy(dst, src, (size_t)r.n * es);
            continue;
        }
#define S_STRIDED(T)                                                          \
    do {                                                                      \
        T *restrict y_ = (T *)dst;                                            \
        const T *restrict x_ = (const T *)src;                                \
        for (int64_t i = 0; i < r.n; i++)                                     \
            y_[i] = x_[i * step];                                             \
    } while (0)
        switch (es) {
        case 1:
            S_STRIDED(uint8_t);
            break;
        case 2:
            S_STRIDED(uint16_t);
            break;
        case 4:
            S_STRIDED(uint32_t);
            break;
        default:
            S_STRIDED(uint64_t);
            break;
        }
#undef S_STRIDED
    }
}

/* dst[w * b] = src[w] for w < W, elements of es bytes. */
static void s_interleave(size_t es, void *dst, const void *src, int64_t W, int64_t b)
{
#define S_SCATTER(T)                                                          \
    do {                                                                      \
        T *restrict y_ = dst;                                                 \
        const T *restrict x_ = src;                                           \
        for (int64_t w = 0; w < W; w++)                                       \
            y_[w * b] = x_[w];                                                \
    } while (0)
    switch (es) {
    case 1:
        S_SCATTER(uint8_t);
        break;
    case 2:
        S_SCATTER(uint16_t);
        break;
    case 4:
        S_SCATTER(uint32_t);
        break;
    default:
        S_SCATTER(uint64_t);
        break;
    }
#undef S_SCATTER
}

/* y[n, c, h*b + i, w*b + j] = x[n, ch, h, w] with ch = (i*b + j)*C' + c
 * (DCR) or c*b*b + i*b + j (CRD). Output row (n, c, h, i) takes element j
 * of each block from input row (n, ch, h). */
void gx_cpu_DEPTHTOSPACE(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t *s = x->shape, b = k->attr[GX_DEPTHTOSPACE_BLOCKSIZE].i;
    const int64_t C = s[1], Co = C / (b * b), H = s[2], W = s[3];
    const bool crd = strcmp(k->attr[GX_DEPTHTOSPACE_MODE].s, "CRD") == 0;
    const size_t es = gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel / (W * b), 1, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const int64_t i = row % b, h = row / b % H, c = row / (b * H) % Co, n = row / (b * H * Co);
        char *dst = (char *)y->data + (size_t)(row * W * b) * es;
        for (int64_t j = 0; j < b; j++) {
            const int64_t ch = crd ? c * b * b + i * b + j : (i * b + j) * Co + c;
            const char *src = (const char *)x->data + (size_t)(((n * C + ch) * H + h) * W) * es;
            s_interleave(es, dst + (size_t)j * es, src, W, b);
        }
    }
}

/* y[n, (i*b + j)*C + c, h, w] = x[n, c, h*b + i, w*b + j]; y seen as
 * [N, b, b, C, H/b, W/b]. */
void gx_cpu_SPACETODEPTH(const gx_kargs *k)
{
    const int64_t *s = k->in[0].shape, b = k->attr[GX_SPACETODEPTH_BLOCKSIZE].i;
    const int64_t C = s[1], H = s[2], W = s[3];
    const int64_t shape[6] = {s[0], b, b, C, H / b, W / b};
    const int64_t xs[6] = {C * H * W, W, 1, H * W, b * W, b};
    s_gather6(k, shape, xs);
}
