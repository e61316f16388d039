/* Work shares and the strided iterator of the CPU kernels (ops/cpu/cpu.h). */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "ops/cpu/cpu.h"

/* Start of share i of nth over n units, rounded down to align. */
static int64_t s_share_start(int64_t n, int64_t align, int i, int nth)
{
    if (i >= nth)
        return n;
    int64_t q = n / nth, r = n % nth;
    int64_t start = (int64_t)i * q + (i < r ? i : r);
    return start / align * align;
}

void gx_cpu_share(const gx_kargs *k, int64_t n, int64_t align, int64_t *lo, int64_t *hi)
{
    int nth = k->nth > 0 ? k->nth : 1;
    *lo = s_share_start(n, align, k->ith, nth);
    *hi = s_share_start(n, align, k->ith + 1, nth);
}

void gx_cpu_coop_wait(_Atomic int64_t *done, int64_t n)
{
    for (unsigned i = 1; atomic_load_explicit(done, memory_order_acquire) < n; i++) {
        if (i % 256 == 0)
            sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else
            __builtin_ia32_pause();
#endif
    }
}

void gx_bcast_strides(int nout, int nin, const int64_t *in, int64_t *strides)
{
    int64_t s = 1;
    for (int d = nout - 1; d >= 0; d--) {
        int di = d - (nout - nin); /* the input's dim aligned with output dim d */
        if (di < 0 || in[di] == 1) {
            strides[d] = 0;
        } else {
            strides[d] = s;
            s *= in[di];
        }
    }
}

void gx_nditer_init(gx_nditer *it, int ndim, const int64_t *shape, int n_in,
                    const int64_t *const *strides)
{
    memset(it, 0, sizeof *it);
    it->n_in = n_in;
    /* keep the dims of size != 1, merging each into the previous kept one
     * when every operand is contiguous across the pair */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        bool merge = nd > 0;
        for (int i = 0; merge && i < n_in; i++)
            merge = it->stride[i][nd - 1] == strides[i][d] * shape[d];
        if (merge) {
            it->shape[nd - 1] *= shape[d];
            for (int i = 0; i < n_in; i++)
                it->stride[i][nd - 1] = strides[i][d];
        } else {
            it->shape[nd] = shape[d];
            for (int i = 0; i < n_in; i++)
                it->stride[i][nd] = strides[i][d];
            nd++;
        }
    }
    if (nd == 0) { /* one element */
        it->shape[0] = 1;
        nd = 1;
    }
    it->ndim = nd;
    for (int i = 0; i < n_in; i++)
        it->step[i] = it->stride[i][nd - 1];
}

void gx_nditer_seek(gx_nditer *it, int64_t lo, int64_t hi)
{
    it->pos = lo;
    it->end = hi;
    for (int i = 0; i < it->n_in; i++)
        it->off[i] = 0;
    if (lo >= hi) /* nothing to do (and shapes may hold a 0) */
        return;
    int64_t rest = lo;
    for (int d = it->ndim - 1; d >= 0; d--) {
        it->idx[d] = rest % it->shape[d];
        rest /= it->shape[d];
        for (int i = 0; i < it->n_in; i++)
            it->off[i] += it->idx[d] * it->stride[i][d];
    }
}

bool gx_nditer_next(gx_nditer *it, gx_nditer_run *r)
{
    if (it->pos >= it->end)
        return false;
    int last = it->ndim - 1;
    int64_t n = it->shape[last] - it->idx[last];
    if (n > it->end - it->pos)
        n = it->end - it->pos;
    r->y = it->pos;
    r->n = n;
    for (int i = 0; i < it->n_in; i++)
        r->off[i] = it->off[i];
    /* advance by n along the last dim, then carry into the outer dims */
    it->pos += n;
    it->idx[last] += n;
    for (int i = 0; i < it->n_in; i++)
        it->off[i] += n * it->stride[i][last];
    for (int d = last; d > 0 && it->idx[d] == it->shape[d]; d--) {
        it->idx[d] = 0;
        it->idx[d - 1]++;
        for (int i = 0; i < it->n_in; i++)
            it->off[i] += it->stride[i][d - 1] - it->shape[d] * it->stride[i][d];
    }
    return true;
}
