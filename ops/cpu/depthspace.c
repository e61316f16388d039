/*
 * DepthToSpace and SpaceToDepth on the CPU, any dtype: both are a
 * reshape to 6-D, a transpose and a reshape back, done as one strided
 * gather. The output is seen as 6-D and walked in order; the input's
 * strides, permuted, say where each element comes from. A share is an
 * element range of the output on cache-line boundaries.
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

/* y[n, c, h*b + i, w*b + j] = x[n, ch, h, w] with ch = (i*b + j)*C' + c
 * (DCR) or c*b*b + i*b + j (CRD); y seen as [N, C', H, b, W, b]. */
void gx_cpu_DEPTHTOSPACE(const gx_kargs *k)
{
    const int64_t *s = k->in[0].shape, b = k->attr[GX_DEPTHTOSPACE_BLOCKSIZE].i;
    const int64_t C = s[1], Co = C / (b * b), H = s[2], W = s[3], HW = H * W;
    const bool crd = strcmp(k->attr[GX_DEPTHTOSPACE_MODE].s, "CRD") == 0;
    const int64_t shape[6] = {s[0], Co, H, b, W, b};
    int64_t xs[6] = {C * HW, HW, W, b * Co * HW, 1, Co * HW};
    if (crd) {
        xs[1] = b * b * HW;
        xs[3] = b * HW;
        xs[5] = HW;
    }
    s_gather6(k, shape, xs);
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
