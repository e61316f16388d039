/*
 * The I/O thread: a ROUTER socket (plus optional TCP endpoints), a table of
 * request types, and the replies. It only decodes, validates and enqueues;
 * compiling and executing happen on the workers, which hand finished jobs
 * back through the pool's done callback. See docs/protocol.md.
 */
#ifndef GXD_SERVER_H
#define GXD_SERVER_H

#include "daemon/ctx.h"

/* Discover the topology, start the workers, bind the endpoints. On failure
 * returns a status with a message; gxd_server_fini must still be called. */
int gxd_server_init(gxd_ctx *ctx, char *err, size_t errlen);
/* Serve until SIGTERM/SIGINT, then stop accepting, answer every queued job
 * with GX_ESHUTDOWN, let running jobs finish (cancelling them after
 * shutdown_grace_ms) and send their replies. Returns 0. */
int gxd_server_run(gxd_ctx *ctx);
void gxd_server_fini(gxd_ctx *ctx);

#endif
