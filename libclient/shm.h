/*
 * libgexec's shared-memory regions (docs/shm.md): gx_shm's body, shared by
 * shm.c, which makes and maps them, and client.c, which registers them
 * with the daemon and keeps one per client for large tensors.
 */
#ifndef GX_LIBCLIENT_SHM_H
#define GX_LIBCLIENT_SHM_H

#include <stdbool.h>
#include <stddef.h>

#include "core/wire.h"

struct gx_shm {
    char name[GX_WIRE_SHM_MAX_NAME]; /* /dev/shm/<name> while linked */
    void *base;                      /* mapped shared, bytes long */
    size_t bytes;
    bool linked;                     /* the name still exists: gx_shm_destroy unlinks it */
};

/* The region of c's submission/completion ring (docs/shm.md, "Ring"),
 * NULL before its first use; owned by c. For the tests, which write
 * hostile rings into it. */
struct gx_client;
struct gx_shm *gx_client_ring_shm(struct gx_client *c);

/* Removes the region's name from /dev/shm (its memory stays while mapped,
 * by this process or the daemon). */
void gx_shm_unlink(struct gx_shm *s);

#endif
