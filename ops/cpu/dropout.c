/*
 * Dropout on the CPU: only its deterministic form runs (inference, or
 * training with ratio 0; the schema refuses the rest), which copies the
 * data and keeps every element: the optional mask is all true. Shares are
 * byte ranges of each output on cache-line boundaries.
 */
#include <string.h>

#include "ops/cpu/cpu.h"

#define S_LINE_BYTES 64

void gx_cpu_DROPOUT(const gx_kargs *k)
{
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
