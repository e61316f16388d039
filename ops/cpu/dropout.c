/*
 * Dropout on the CPU: the deterministic form (inference, or training with
 * ratio 0) copies the data and keeps every element: the optional mask is
 * all true. Shares are byte ranges of each output on cache-line
 * boundaries. Training with another ratio draws (gx_cpu_dropout_draw).
 */
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/schema.h"

#define S_LINE_BYTES 64

void gx_cpu_DROPOUT(const gx_kargs *k)
{
    if (gx_dropout_draws(k->in, k->n_in, k->attr)) {
        gx_cpu_dropout_draw(k);
        return;
    }
    const gx_view *x = &k->in[0];
    const int64_t nbytes = x->numel * (int64_t)gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, nbytes, S_LINE_BYTES, &lo, &hi);
    if (lo < hi)
        memcpy((char *)k->out[0].data + lo, (const char *)x->data + lo, (size_t)(hi - lo));
    if (k->n_out > 1) {
        gx_cpu_share(k, x->numel, S_LINE_BYTES, &lo, &hi);
        if (lo < hi)
            memset((bool *)k->out[1].data + lo, 1, (size_t)(hi - lo));
    }
}
