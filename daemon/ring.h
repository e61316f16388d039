/*
 * Submission/completion rings in clients' shared-memory regions (layout:
 * core/ring.h; docs/shm.md, "Ring"): the local fast path for small jobs.
 *
 * RING_OPEN (on the I/O thread) starts one thread per ring that copies
 * each submission out of the region, checks it, makes a RUN job of it and
 * pushes it on the daemon's queue, as a socket RUN is; the job's single
 * completion is posted by the worker that finished it, or by the I/O
 * thread where it would have sent the reply (gxd_ring_post). A cancel
 * submission takes a queued job out (answered through hooks.finished) or
 * asks a running one to stop (hooks.cancel_running). A ring belongs to the connection that opened it
 * and goes with it (RING_CLOSE, SHM_UNREGISTER of its region, the client
 * disconnecting); jobs hold references, so a ring is freed after its last
 * job, and completions for a closed ring are dropped.
 *
 *     gxd_rings rs;
 *     gxd_rings_init(&rs, &queue, &limits_max_priority);
 *     gxd_ring_open(&rs, region, id, idlen, false, err, errlen);  // RING_OPEN
 *     gxd_ring_bind(&rs, id, idlen, region->name, model, &slot, err, errlen);
 *     ...                                        // jobs arrive through the queue
 *     gxd_ring_post(j);                          // in place of the RUN reply
 *     gxd_rings_drop_client(&rs, id, idlen);     // the client went away
 *     gxd_rings_fini(&rs);
 *
 * The table is the I/O thread's; a ring's thread reads only its ring.
 */
#ifndef GXD_RING_H
#define GXD_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/job.h"
#include "daemon/queue.h"
#include "daemon/shm.h"

/* Rings one connection may open, and one daemon serves (a thread each). */
#define GXD_RING_PER_CLIENT 4
#define GXD_RING_MAX 64

typedef struct gxd_ring gxd_ring;

/* Counters (STATS "ring"), updated by several threads. */
typedef struct gxd_ring_stats {
    atomic_uint_fast64_t opened, closed, hostile; /* rings; hostile: closed for bad indices */
    atomic_uint_fast64_t jobs, refused, dropped;  /* submissions; refused: error completions;
                                                   * dropped: completions of closed rings */
    atomic_uint_fast64_t cancels;                 /* GX_RING_CANCEL submissions */
} gxd_ring_stats;

/* What a ring's thread needs of the daemon to cancel a job (a
 * GX_RING_CANCEL submission), set before the first RING_OPEN (the server
 * sets them once its pool runs). Called on ring threads: thread-safe. */
typedef struct gxd_ring_hooks {
    /* ask the running (or batch-held) job (identity, id) to stop at its
     * next step; true if it was running (gxd_pool_cancel) */
    bool (*cancel_running)(void *arg, const void *identity, size_t identity_len, uint64_t id);
    /* a job that will not run (its status set): answer it as a finished
     * one (the pool's done callback: posts its completion, counts it) */
    void (*finished)(void *arg, gxd_job *j);
    void *arg;
} gxd_ring_hooks;

typedef struct gxd_rings {
    gxd_ring *head;
    size_t n;
    gxd_queue *queue;
    gxd_ring_hooks hooks; /* without them, a cancel is answered GX_EUNSUPPORTED */
    uint32_t serials;     /* rings opened: each one's jobs' ids carry its serial */
    atomic_int max_priority; /* limits.max_client_priority: submissions above are refused */
    gxd_ring_stats stats;
} gxd_rings;

void gxd_rings_init(gxd_rings *rs, gxd_queue *queue, int max_priority);
/* Closes every ring (their threads are joined). */
void gxd_rings_fini(gxd_rings *rs);
/* Stops every ring's thread (joined): no submission is taken, and no hook
 * called, from here on; completions of jobs still running are posted.
 * Before the pool the hooks reach goes (shutdown). */
void gxd_rings_stop(gxd_rings *rs);

/* RING_OPEN: serve the ring laid out at the start of region (registered by
 * this client; the table takes its own reference); elevated: the client
 * may exceed limits.max_client_priority, as a socket RUN may. Reads magic and
 * entries once. GX_EINVAL (layout), GX_EBUSY (a ring there already),
 * GX_ELIMIT (GXD_RING_*), GX_ENOMEM, with a message in err. */
int gxd_ring_open(gxd_rings *rs, gxd_shm_region *region, const void *identity,
                  size_t identity_len, bool elevated, char *err, size_t errlen);
/* RING_BIND: model (a reference, which the ring keeps until it closes or
 * the registry evicts or unloads the model, gxd_rings_unbind;
 * taken in all cases) to a slot of the client's ring in region name: the
 * slot in *slot (the same one for a model bound already). */
int gxd_ring_bind(gxd_rings *rs, const void *identity, size_t identity_len, const char *name,
                  struct gxd_model *model, uint32_t *slot, char *err, size_t errlen);
/* The registry evicts model (graphs.max, the memory budget): every ring
 * slot that holds it lets it go; a submission to such a slot is answered
 * GX_ENOTFOUND, and RING_BIND reuses the slot. arg: the rings (the
 * gxd_models.unbind hook). I/O thread. */
void gxd_rings_unbind(void *arg, struct gxd_model *model);
/* RING_CLOSE, SHM_UNREGISTER: the client's ring in region name (NULL:
 * all of the client's); how many were closed. */
size_t gxd_ring_close(gxd_rings *rs, const void *identity, size_t identity_len,
                      const char *name);
/* The client disconnected: its rings close. */
size_t gxd_rings_drop_client(gxd_rings *rs, const void *identity, size_t identity_len);
/* Rings open now. */
size_t gxd_rings_count(const gxd_rings *rs);

/* Drops a job's reference on its ring (gxd_job_destroy). Accepts NULL. */
void gxd_ring_release(gxd_ring **r);
/* The job's ring, or NULL for a socket job. */
gxd_ring *gxd_job_ring(const gxd_job *j);
/* Posts the finished job j's one completion to its ring (dropped when the
 * ring was closed) and drops j's reference on the ring. I/O thread; j is
 * then destroyed by the caller. */
void gxd_ring_post(gxd_job *j);

#endif
