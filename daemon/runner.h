/*
 * The job runner: what a worker does with one job. It checks the job's
 * model, compiles (LOAD, EXPLAIN and the first RUN of a shape), binds the
 * inputs, asks the policy for a mode, lays the replicas out over the
 * worker's arenas, runs the executor with the worker leading its team, and
 * collects the outputs into the job. It knows nothing of threads or of the
 * server: the pool calls it, and hands the job on afterwards.
 */
#ifndef GXD_RUNNER_H
#define GXD_RUNNER_H

#include "daemon/arenas.h"
#include "daemon/calibrate.h"
#include "daemon/ctx.h"
#include "daemon/team.h"

/* What every job of a pool runs with. Owned by the pool, read-only while
 * its workers run. */
typedef struct gxd_runner {
    gxd_ctx *ctx;
    gxd_team *team;             /* the pool's team: the running worker leads */
    int workers;                /* the pool's workers */
    int team_max;               /* largest team: workers, at most GXD_MAX_TEAM */
    const gxd_calibration *cal; /* the machine's overheads, for the policy */
} gxd_runner;

/* Run job j on the calling worker with its arena cache a (slot k: the
 * job's replica k; grown as needed). Sets j's result: outputs, status and
 * message, the mode that ran and why, timings. Errors go into the job,
 * never anywhere else; the caller still owns j. */
void gxd_runner_execute(const gxd_runner *rn, gxd_arenas *a, gxd_job *j);

#endif
