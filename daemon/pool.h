/*
 * The worker pool: one thread per owned core, pinned to it. Workers block on
 * the queue (no spinning), run one job at a time in their own arenas (the
 * job runner, daemon/runner.h), help other workers' jobs as a team
 * (daemon/team.h), and hand each finished job to the done callback (the
 * server's: it sends the reply from the I/O thread). The pool never runs
 * more busy threads than the cores the daemon owns. The machine's overheads
 * are measured once at start (daemon/calibrate.h).
 */
#ifndef GXD_POOL_H
#define GXD_POOL_H

#include "daemon/ctx.h"

typedef struct gxd_pool gxd_pool;

/* Called on a worker thread with each job it finished (result set);
 * ownership of j moves in. Must be thread-safe, and quick: the worker
 * takes its next job after it returns. */
typedef void (*gxd_pool_done_fn)(void *arg, gxd_job *j);

/* Start one worker per owned core and calibrate; finished jobs go to
 * done(done_arg, job). GX_OK or GX_ENOMEM/GX_EINTERNAL; on failure *out
 * may still be set (gxd_pool_join it). */
int gxd_pool_start(gxd_ctx *ctx, gxd_pool_done_fn done, void *done_arg, gxd_pool **out,
                   char *err, size_t errlen);
/* Wait for every worker to exit (the queue must be closed first). */
void gxd_pool_join(gxd_pool **p);
int gxd_pool_size(const gxd_pool *p);
/* Ask the running job (identity, id) to stop, also one held in a running
 * job's batch (daemon/batcher.h); true if it was running or held. */
bool gxd_pool_cancel(gxd_pool *p, const void *identity, size_t identity_len, uint64_t id);
/* Ask every running job to stop (shutdown after the grace period). */
void gxd_pool_cancel_all(gxd_pool *p);
/* Ask every running job of the client identity to stop at its next step
 * (it went away); returns how many were running and not yet asked. */
int gxd_pool_cancel_client(gxd_pool *p, const void *identity, size_t identity_len);
/* Jobs running right now. */
int gxd_pool_busy(gxd_pool *p);

#endif
