/*
 * The CPU kernel of a fused elementwise group (ops/fused.h). The output is
 * cut into tiles of GX_FUSED_TILE_BYTES; a thread's share is a run of
 * whole tiles. For each tile, each op of the group runs its own kernel on
 * tile-sized views: the group's inputs are read in place where they have
 * the output's shape, passed as one value where they are scalars, and
 * gathered into a tile where they broadcast along some dims; intermediate
 * values go to temporaries on the stack, and only the last op writes to
 * the output. Each element goes through the same row functions in the
 * same order as unfused, so results are bit-identical.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/fused.h"

/* How a group input is seen by a tile. */
typedef enum s_in_kind { S_IN_FULL, S_IN_SCALAR, S_IN_GATHER } s_in_kind;


/* Elements [lo, lo + n) of input x broadcast to y's shape, into buf. */
static void s_gather(const gx_view *y, const gx_view *x, const int64_t *stride, int64_t lo,
                     int64_t n, void *buf)
{
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){stride});
    gx_nditer_seek(&it, lo, lo + n);
    const size_t es = gx_dtype_size(x->dtype);
    gx_nditer_run r;
    char *out = buf;
    while (gx_nditer_next(&it, &r)) {
        const char *src = (const char *)x->data + r.off[0] * (int64_t)es;
        char *dst = out + (r.y - lo) * (int64_t)es;
        if (it.step[0] == 1) {
            memcpy(dst, src, (size_t)r.n * es);
        } else { /* one repeated value along the run */
            for (int64_t i = 0; i < r.n; i++)
                memcpy(dst + i * (int64_t)es, src, es);
        }
    }
}

void gx_cpu_fused(const gx_fused *f, const gx_view *in, const gx_view *y, int ith, int nth)
{
    _Alignas(GX_ALIGN) unsigned char tmp[GX_FUSED_MAX_TMP][GX_FUSED_TILE_BYTES];
    _Alignas(GX_ALIGN) unsigned char gat[GX_FUSED_MAX_GATHER][GX_FUSED_TILE_BYTES];
    s_in_kind kind[GX_FUSED_MAX_IN];
    int slot[GX_FUSED_MAX_IN];
    int64_t stride[GX_FUSED_MAX_GATHER][GX_MAX_DIMS];
    size_t es = gx_dtype_size(y->dtype);
    int n_gather = 0;
    for (int i = 0; i < f->n_in; i++) {
        size_t e = gx_dtype_size(in[i].dtype);
        es = e > es ? e : es;
        kind[i] = in[i].numel == y->numel ? S_IN_FULL
                  : in[i].numel == 1      ? S_IN_SCALAR
                                          : S_IN_GATHER;
        slot[i] = -1;
        if (kind[i] == S_IN_GATHER) {
            if (n_gather == GX_FUSED_MAX_GATHER) { /* the fuse pass never builds one */
                fprintf(stderr, "%s:%d: fused group with too many broadcast inputs\n", __FILE__,
                        __LINE__);
                abort();
            }
            slot[i] = n_gather;
            gx_bcast_strides(y->ndim, in[i].ndim, in[i].shape, stride[n_gather++]);
        }
    }
    const int64_t tile = (int64_t)(GX_FUSED_TILE_BYTES / es);
    const int64_t n_tiles = (y->numel + tile - 1) / tile;
    const int64_t t_lo = n_tiles * ith / nth, t_hi = n_tiles * (ith + 1) / nth;
    const size_t ey = gx_dtype_size(y->dtype);

    for (int64_t t = t_lo; t < t_hi; t++) {
        const int64_t lo = t * tile, n = y->numel - lo < tile ? y->numel - lo : tile;
        gx_view src[GX_FUSED_MAX_IN];
        for (int i = 0; i < f->n_in; i++) {
            const gx_view *x = &in[i];
            src[i] = (gx_view){.dtype = x->dtype, .ndim = 1, .shape = {n}, .numel = n};
            switch (kind[i]) {
            case S_IN_FULL:
                src[i].data = (char *)x->data + lo * (int64_t)gx_dtype_size(x->dtype);
                break;
            case S_IN_SCALAR:
                src[i].ndim = 0;
                src[i].numel = 1;
                src[i].data = x->data;
                break;
            case S_IN_GATHER:
                s_gather(y, x, stride[slot[i]], lo, n, gat[slot[i]]);
                src[i].data = gat[slot[i]];
                break;
            }
        }
        for (int o = 0; o < f->n_ops; o++) {
            const gx_fused_op *op = &f->op[o];
            gx_view a[GX_FUSED_MAX_OP_IN], out;
            for (int k = 0; k < op->n_in; k++) {
                const int c = op->in[k];
                if (c == GX_FUSED_NONE)
                    a[k] = (gx_view){.ndim = -1};
                else if (c >= 0)
                    a[k] = src[c];
                else
                    a[k] = (gx_view){.dtype = f->dtype, .ndim = 1, .shape = {n}, .numel = n,
                                     .data = tmp[-1 - c]};
            }
            out = (gx_view){.dtype = f->dtype, .ndim = 1, .shape = {n}, .numel = n,
                            .data = op->out >= 0 ? (void *)tmp[op->out]
                                                 : (void *)((char *)y->data + lo * (int64_t)ey)};
            const gx_kargs ka = {.attr = op->attr, .n_in = op->n_in, .in = a, .n_out = 1,
                                 .out = &out, .scratch = NULL, .ith = 0, .nth = 1};
            op->kernel(&ka);
        }
    }
}
