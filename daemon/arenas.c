/* A worker's arena cache. See arenas.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/arenas.h"
#include "core/internal.h"

void gxd_arenas_init(gxd_arenas *a) { memset(a, 0, sizeof *a); }

/* Frees host arena k, unpinned first. */
static void s_host_free(gxd_arenas *a, int k)
{
    if (a->pinned[k])
        a->pinned[k]->unpin(a->pinned[k], a->p[k]);
    a->pinned[k] = NULL;
    free(a->p[k]);
    a->p[k] = NULL;
    a->cap[k] = 0;
}

void gxd_arenas_fini(gxd_arenas *a)
{
    for (int k = 0; k < GXD_MAX_TEAM; k++) {
        s_host_free(a, k);
        for (int d = 0; d < GXD_MAX_DEVICES; d++) {
            gxd_dev_arena *e = &a->dev[k][d];
            if (e->queue) {
                e->dev->queue_sync(e->dev, e->queue);
                e->dev->queue_free(e->dev, e->queue);
            }
            if (e->p)
                e->dev->free(e->dev, e->p);
        }
    }
    memset(a, 0, sizeof *a);
}

void *gxd_arenas_get(gxd_arenas *a, int k, size_t bytes)
{
    if (bytes > a->cap[k] || !a->p[k]) {
        /* whole pages, page-aligned: a pin takes whole pages (and two
         * arenas must not share one) */
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        const size_t n = bytes ? (bytes + page - 1) / page * page : page;
        s_host_free(a, k);
        if (n < bytes || !(a->p[k] = aligned_alloc(page, n)))
            return NULL;
        a->cap[k] = n;
    }
    return a->p[k];
}

/* Slot k's entry for device b: its own, else a free one (NULL: none left). */
static gxd_dev_arena *s_entry(gxd_arenas *a, int k, const gx_backend *b)
{
    gxd_dev_arena *free_one = NULL;
    for (int d = 0; d < GXD_MAX_DEVICES; d++) {
        if (a->dev[k][d].dev == b)
            return &a->dev[k][d];
        if (!a->dev[k][d].dev && !free_one)
            free_one = &a->dev[k][d];
    }
    if (free_one)
        free_one->dev = b;
    return free_one;
}

int gxd_arenas_devmem(gxd_arenas *a, int k, const gxd_plan *plan, bool dag, gxd_devmem *dm,
                      char *err, size_t errlen)
{
    memset(dm, 0, sizeof *dm);
    for (size_t d = 1; d < plan->n_devices; d++) {
        const gx_backend *b = plan->devices[d];
        if (b->host_memory)
            continue;
        gxd_dev_arena *e = s_entry(a, k, b);
        if (!e)
            return gx_errf(err, errlen, GX_ELIMIT, "a worker keeps arenas on %d devices at most",
                           GXD_MAX_DEVICES);
        const size_t bytes = dag ? plan->dev_dag_arena_bytes[d] : plan->dev_arena_bytes[d];
        if (bytes > e->cap || !e->p) {
            if (e->p) { /* nothing may still run on it */
                if (e->queue)
                    b->queue_sync(b, e->queue);
                b->free(b, e->p);
                e->p = NULL;
                e->cap = 0;
            }
            if (!(e->p = b->alloc(b, bytes)))
                return gx_errf(err, errlen, GX_ENOMEM, "%s has no room for an arena of %zu bytes",
                               b->name, bytes);
            e->cap = bytes;
        }
        if (b->queue_new && !e->queue && !(e->queue = b->queue_new(b)))
            return gx_errf(err, errlen, GX_ENOMEM, "%s: cannot make a queue", b->name);
        dm->arena[d] = e->p;
        dm->queue[d] = e->queue;
        /* a pin failing leaves the arena as it was: copies go through
         * the device's staging */
        if (!a->pinned[k] && b->pin && a->p[k] && a->cap[k] <= GXD_PIN_MAX &&
            b->pin(b, a->p[k], a->cap[k]) == GX_OK)
            a->pinned[k] = b;
    }
    return GX_OK;
}
