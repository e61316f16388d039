/*
 * Per-client limits on loaded graphs (issue 18): a client is one
 * connection, named by its ZeroMQ routing id, as the queue's fair turns
 * and the dead-client drop name it. The graphs a client holds are the
 * ones it asked for (LOAD, or a graph inline in RUN, EXPLAIN, TUNE or
 * COMPILE) that are still in the registry; their bytes are what the
 * memory budget counts for them (graph and plans, daemon/models.h, plans
 * made at run time included). limits.client_memory_bytes counts only the
 * graphs a client alone holds: a graph two clients asked for is charged
 * to neither, only to limits.max_memory_bytes (docs/security.md), so no
 * client is refused for what another loaded, and it counts again for the
 * one left holding it. limits.client_graphs counts every graph the client
 * holds, shared or not. For a new graph beyond
 * limits.client_graphs or limits.client_memory_bytes, the client's own
 * idle graphs (no job holds them, no other client asked for them) are
 * unloaded, least recently used first; what still does not fit is
 * refused with GX_ELIMIT before it is added; other clients go on. Jobs queued per
 * client are the queue's bound (gxd_queue_set_client_max).
 *
 * I/O thread only. A record remembers a graph by id and the model's
 * serial, so a graph evicted, unloaded or loaded again by another client
 * is not counted for this one any more.
 *
 *   gxd_clients_init(&cs, 128, 1 << 30);
 *   if (gxd_clients_check(&cs, &models, ident, len, &id, bytes, err, n) == GX_OK)
 *       ... gxd_models_add_id ..., then gxd_clients_hold(&cs, ident, len, mdl);
 *   gxd_clients_drop(&cs, ident, len);        // it disconnected
 *   gxd_clients_fini(&cs);
 */
#ifndef GXD_CLIENTS_H
#define GXD_CLIENTS_H

#include "daemon/job.h"
#include "daemon/models.h"

typedef struct gxd_client_hold {
    gx_graph_id id;
    uint64_t serial;
} gxd_client_hold;

typedef struct gxd_client {
    uint8_t identity[GXD_MAX_IDENTITY];
    size_t identity_len;
    gxd_client_hold *holds;
    size_t n, cap;
} gxd_client;

typedef struct gxd_clients {
    gxd_client *v;
    size_t n, cap;
    size_t max_graphs; /* limits.client_graphs; 0: none */
    int64_t max_bytes; /* limits.client_memory_bytes in effect; 0: none */
} gxd_clients;

void gxd_clients_init(gxd_clients *cs, size_t max_graphs, int64_t max_bytes);
void gxd_clients_fini(gxd_clients *cs);
/* New limits (SIGHUP): what clients hold stays; later checks see them. */
void gxd_clients_set_limits(gxd_clients *cs, size_t max_graphs, int64_t max_bytes);
/* May the client hold graph id as well? new_bytes: what it holds when it
 * is not loaded yet (gxd_graph_mem_bytes); a loaded one counts its model's
 * bytes, one the client holds already always may. Makes room by unloading
 * the client's own idle graphs (see above). GX_OK, or GX_ELIMIT with err
 * naming the limit and its value. */
int gxd_clients_check(gxd_clients *cs, gxd_models *m, const void *identity, size_t identity_len,
                      const gx_graph_id *id, int64_t new_bytes, char *err, size_t errlen);
/* The client holds mdl (after gxd_models_add_id). GX_OK, or GX_ENOMEM
 * (then it is not counted for the client). */
int gxd_clients_hold(gxd_clients *cs, const void *identity, size_t identity_len,
                     const gxd_model *mdl);
/* What the client holds now: graphs (shared ones too), and the bytes of
 * those it alone holds. */
void gxd_clients_usage(gxd_clients *cs, gxd_models *m, const void *identity, size_t identity_len,
                       size_t *graphs, int64_t *bytes);
/* The client went away: forget its record. */
void gxd_clients_drop(gxd_clients *cs, const void *identity, size_t identity_len);

#endif
