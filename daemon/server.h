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
/* One device the daemon offers plans on: its backend's name, the jobs
 * that ran steps on it, the bytes it holds (the CPU: loaded graphs and
 * their plans as limits.max_memory_bytes counts them; another device: its
 * arenas, constants and prepared weights, the backend's in_use; -1: it
 * does not say) and the bytes it can still give (capacity; -1: unknown). */
typedef struct gxd_device_stat {
    const char *name; /* the backend's, static */
    uint64_t jobs;
    int64_t in_use, free;
} gxd_device_stat;
/* The devices, the CPU first, at most max into out; their count. I/O
 * thread (STATS, the Prometheus text). */
size_t gxd_device_stats(const gxd_ctx *ctx, gxd_device_stat *out, size_t max);
void gxd_server_fini(gxd_ctx *ctx);

#endif
