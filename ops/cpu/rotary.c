/*
 * RotaryEmbedding (opset 23) on the CPU, float32. X is walked in rows of
 * one head (head_size values, contiguous in both of X's layouts); a
 * share is a range of rows. Each row's first rotary_embedding_dim values
 * are pairs (x1, x2), the two halves or, interleaved, the even and odd
 * values, rotated by their position's cos/sin row:
 *     (cos x1 - sin x2, sin x1 + cos x2),
 * in float32 as the ONNX reference computes it; the rest are copied.
 */
#include "ops/cpu/cpu.h"

/* One head: y = x rotated over its first 2 * half values. */
GX_CPU_CLONES static void s_rotate(int64_t half, bool interleaved, float *restrict y,
                                   const float *restrict x, const float *restrict c,
                                   const float *restrict s)
{
    if (interleaved) {
        for (int64_t i = 0; i < half; i++) {
            const float x1 = x[2 * i], x2 = x[2 * i + 1];
            y[2 * i] = c[i] * x1 - s[i] * x2;
            y[2 * i + 1] = s[i] * x1 + c[i] * x2;
        }
    } else {
        for (int64_t i = 0; i < half; i++) {
            const float x1 = x[i], x2 = x[half + i];
            y[i] = c[i] * x1 - s[i] * x2;
            y[half + i] = s[i] * x1 + c[i] * x2;
        }
    }
}

void gx_cpu_ROTARY_EMBEDDING(const gx_kargs *k)
{
    static const float zeros[1] = {0};
    const gx_view *x = &k->in[0], *cs = &k->in[1];
    const bool four = x->ndim == 4, has_pos = k->n_in > 3 && k->in[3].ndim >= 0;
    const int64_t batch = x->shape[0], seq = x->shape[four ? 2 : 1];
    const int64_t heads = four ? x->shape[1] : k->attr[GX_ROTARY_NUM_HEADS].i;
    const int64_t head = four ? x->shape[3] : x->shape[2] / heads;
    const int64_t dim = k->attr[GX_ROTARY_DIM].i ? k->attr[GX_ROTARY_DIM].i : head;
    const int64_t half = dim / 2;
    const bool interleaved = k->attr[GX_ROTARY_INTERLEAVED].i != 0;
    const float *cosv = cs->data, *sinv = k->in[2].data;
    const int64_t *pos = has_pos ? k->in[3].data : NULL;
    const int64_t rows = batch * heads * seq;
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        /* [b, h, s] rows for 4-D X, [b, s, h] for 3-D */
        const int64_t b = r / (heads * seq), s = four ? r % seq : r / heads % seq;
        const float *c = zeros, *sn = zeros;
        if (!has_pos) {
            c = cosv + (b * seq + s) * half;
            sn = sinv + (b * seq + s) * half;
        } else if (pos[b * seq + s] >= 0 && pos[b * seq + s] < cs->shape[0]) {
            c = cosv + pos[b * seq + s] * half;
            sn = sinv + pos[b * seq + s] * half;
        }
        const float *xr = (const float *)x->data + r * head;
        float *yr = (float *)k->out[0].data + r * head;
        if (c == zeros) { /* out of range (refused by infer when it sees it) */
            memset(yr, 0, (size_t)dim * sizeof *yr);
        } else {
            s_rotate(half, interleaved, yr, xr, c, sn);
        }
        memcpy(yr + dim, xr + dim, (size_t)(head - dim) * sizeof *yr);
    }
}
