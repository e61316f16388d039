/*
 * A worker's arena cache: the arenas it keeps between jobs, slot k for the
 * k-th replica of the jobs it leads. An arena grows when a plan needs more
 * and is never shrunk, so a steady stream of jobs allocates nothing. Host
 * memory for now. One worker owns one cache: no locking.
 *
 *     gxd_arenas a;
 *     gxd_arenas_init(&a);
 *     void *base = gxd_arenas_get(&a, 0, plan->arena_bytes);
 *     ...
 *     gxd_arenas_fini(&a);
 */
#ifndef GXD_ARENAS_H
#define GXD_ARENAS_H

#include <stddef.h>

#include "daemon/policy.h" /* GXD_MAX_TEAM */

typedef struct gxd_arenas {
    void *p[GXD_MAX_TEAM];
    size_t cap[GXD_MAX_TEAM];
} gxd_arenas;

/* An empty cache (all zero is one too). */
void gxd_arenas_init(gxd_arenas *a);
/* Free every arena; a is empty afterwards. */
void gxd_arenas_fini(gxd_arenas *a);
/* Arena k (0 <= k < GXD_MAX_TEAM), at least bytes long and GX_ALIGN
 * aligned; its contents are not kept when it grows. The cache owns it: it
 * stays valid until the next get of slot k or gxd_arenas_fini. NULL on
 * ENOMEM (slot k is then empty). */
void *gxd_arenas_get(gxd_arenas *a, int k, size_t bytes);

#endif
