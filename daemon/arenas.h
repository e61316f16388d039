/*
 * A worker's arena cache: the arenas it keeps between jobs, slot k for the
 * k-th replica of the jobs it leads, in host memory and on each device
 * without host memory a plan uses (with the worker's queue for that
 * device). An arena grows when a plan needs more and is never shrunk, so a
 * steady stream of jobs allocates nothing. A host arena used by a plan on
 * a device that pins host memory (ops/backend.h: a GPU) is pinned once,
 * up to GXD_PIN_MAX bytes, so that the copies of that plan's inputs and
 * outputs through it run at the bus's speed. One worker owns one cache:
 * no locking.
 *
 *     gxd_arenas a;
 *     gxd_arenas_init(&a);
 *     void *base = gxd_arenas_get(&a, 0, plan->arena_bytes);
 *     gxd_devmem dm;
 *     if (gxd_plan_off_host(plan) && gxd_arenas_devmem(&a, 0, plan, false, &dm) == GX_OK)
 *         gxd_frame_init_dev(&f, plan, base, &dm, false, ...);
 *     ...
 *     gxd_arenas_fini(&a);
 */
#ifndef GXD_ARENAS_H
#define GXD_ARENAS_H

#include <stddef.h>

#include "daemon/exec/exec.h"
#include "daemon/policy.h" /* GXD_MAX_TEAM */

/* A slot's memory on one device: its arena and the worker's queue there. */
typedef struct gxd_dev_arena {
    const gx_backend *dev; /* NULL: unused */
    void *p;
    size_t cap;
    void *queue;
} gxd_dev_arena;

/* Host arenas larger than this are not pinned (page-locked memory is
 * taken from the whole machine). */
#define GXD_PIN_MAX ((size_t)1 << 30)

typedef struct gxd_arenas {
    void *p[GXD_MAX_TEAM]; /* page-aligned, whole pages */
    size_t cap[GXD_MAX_TEAM];
    const gx_backend *pinned[GXD_MAX_TEAM]; /* the device that pinned p[k], or NULL */
    gxd_dev_arena dev[GXD_MAX_TEAM][GXD_MAX_DEVICES];
} gxd_arenas;

/* An empty cache (all zero is one too). */
void gxd_arenas_init(gxd_arenas *a);
/* Free every arena (and queue); a is empty afterwards. */
void gxd_arenas_fini(gxd_arenas *a);
/* Arena k (0 <= k < GXD_MAX_TEAM), at least bytes long and GX_ALIGN
 * aligned; its contents are not kept when it grows. The cache owns it: it
 * stays valid until the next get of slot k or gxd_arenas_fini. NULL on
 * ENOMEM (slot k is then empty). */
void *gxd_arenas_get(gxd_arenas *a, int k, size_t bytes);
/* Slot k's arenas and queues on plan's devices without host memory, as
 * large as the layout dag chooses needs, into *dm (for
 * gxd_frame_init_dev); pins host arena k for the first of them that pins
 * (call after gxd_arenas_get of slot k). GX_OK, or GX_ENOMEM / GX_ELIMIT
 * with err. */
int gxd_arenas_devmem(gxd_arenas *a, int k, const gxd_plan *plan, bool dag, gxd_devmem *dm,
                      char *err, size_t errlen);

#endif
