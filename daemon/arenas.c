/* A worker's arena cache. See arenas.h. */
#include <stdlib.h>
#include <string.h>

#include "daemon/arenas.h"
#include "libclient/internal.h"

void gxd_arenas_init(gxd_arenas *a) { memset(a, 0, sizeof *a); }

void gxd_arenas_fini(gxd_arenas *a)
{
    for (int k = 0; k < GXD_MAX_TEAM; k++) {
        free(a->p[k]);
        a->p[k] = NULL;
        a->cap[k] = 0;
    }
}

void *gxd_arenas_get(gxd_arenas *a, int k, size_t bytes)
{
    if (bytes > a->cap[k]) {
        free(a->p[k]);
        a->cap[k] = 0;
        if (!(a->p[k] = gx_aligned_alloc(bytes)))
            return NULL;
        a->cap[k] = bytes;
    }
    return a->p[k] ? a->p[k] : (a->p[k] = gx_aligned_alloc(GX_ALIGN));
}
