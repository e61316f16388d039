/*
 * The daemon's state: one struct passed explicitly everywhere, no mutable
 * globals, so tests can run two daemons in one process.
 */
#ifndef GXD_CTX_H
#define GXD_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/clients.h"
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/models.h"
#include "daemon/queue.h"
#include "daemon/ring.h"
#include "daemon/shm.h"
#include "daemon/topo.h"

struct gxd_pool;

/* Counters, written by the I/O thread only. */
typedef struct gxd_stats {
    uint64_t requests;        /* every message received */
    uint64_t protocol_errors; /* malformed messages answered with an error */
    uint64_t loads;
    uint64_t runs_ok, runs_failed;
    uint64_t cancelled, expired, rejected_full;
    uint64_t compile_count;
    /* dynamic batching (daemon/batcher.h): merged runs, and the jobs
     * answered from one */
    uint64_t batches, batched_jobs;
    int64_t compute_us_total, queue_us_total, device_us_total;
    /* jobs of clients that disconnected: dropped from the queue, and
     * running ones asked to stop at their next step */
    uint64_t gone_dropped, gone_cancelled;
    uint64_t reloads, reload_failures; /* SIGHUP (daemon/reload.h) */
    /* jobs whose plan ran steps on each device: the CPU, then
     * ctx->part.backends[i] at i + 1 */
    uint64_t device_jobs[GXD_MAX_DEVICES + 1];
} gxd_stats;

/* A connection that sent requests: its file descriptor (from ZeroMQ's
 * socket monitor and each message's ZMQ_SRCFD) and its routing id, so a
 * disconnect finds the client's jobs. */
typedef struct gxd_peer {
    int fd;
    size_t identity_len;
    uint8_t identity[GXD_MAX_IDENTITY];
} gxd_peer;

typedef struct gxd_ctx {
    gxd_config cfg;
    gxd_log log;
    gxd_topo *topo;
    gxd_compile_limits limits; /* limits.part points at part */
    gxd_partition_opts part;
    /* limits.priority_users, resolved at start */
    uid_t priority_uids[GXD_MAX_ENDPOINTS];
    int n_priority_uids;
    gxd_queue queue;
    gxd_models models;
    gxd_shm shm; /* clients' shared-memory regions (daemon/shm.h) */
    gxd_rings rings; /* submission/completion rings in those regions (daemon/ring.h) */
    gxd_clients clients; /* graphs each client holds, for its limits (daemon/clients.h) */
    struct gxd_pool *pool;
    struct gxd_tune *tune; /* best-implementation registry (daemon/tune); NULL: tune.mode off */
    struct gxd_metrics *metrics; /* latency histograms, the HTTP endpoint (daemon/metrics.h) */
    /* what SIGHUP reads again: the file, then the command line's keys
     * (main's strings, alive while the server runs) */
    const char *config_path;
    const char *const *flag_keys, *const *flag_vals;
    int n_flags;

    void *zctx, *router;
    void *monitor; /* PAIR: the router's accepted/disconnected events */
    struct gxd_auth *auth; /* CURVE on tcp endpoints (daemon/auth.h); NULL: no keys */
    gxd_peer *peers; /* connections that sent requests, by fd */
    size_t n_peers, cap_peers;
    int *closed; /* fds of connections closed, not reused yet */
    size_t n_closed, cap_closed;
    char endpoint[512];
    bool ipc_bound; /* endpoint is an ipc:// socket file this daemon bound: removed at the end */
    mode_t socket_mode; /* socket_mode, parsed */
    gid_t socket_gid;   /* socket_group, parsed; (gid_t)-1: the daemon's */
    int signal_fd; /* read end of the signal pipe (SIGTERM/SIGINT/SIGHUP) */
    int done_fd;   /* eventfd: workers finished jobs */
    pthread_mutex_t done_mu;
    gxd_job *done_head, *done_tail;
    unsigned done_quiet; /* ring jobs put there without waking the I/O thread */

    bool stopping;
    int64_t started_us;
    int64_t profiles_saved_us; /* last periodic save of the profiles */
    int64_t replan_tick_us;    /* last time the models were queued for a re-plan check */
    uint64_t watchdog_us;      /* systemd's WatchdogSec= (0: none); pinged at half of it */
    int64_t watchdog_last_us;
    gxd_stats stats;
} gxd_ctx;

#endif
