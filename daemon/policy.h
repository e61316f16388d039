/*
 * The scheduling policy (seed 002): for one job, estimate how long each
 * parallel mode would take and pick the cheapest. Pure functions over a
 * description of the job (gxd_policy_job) and of the machine's state
 * (gxd_policy_machine), so they can be tested on synthetic cost tables.
 *
 * The estimates (all in microseconds, for this job from its start):
 *
 *   seq            total
 *   intra(w)       Σ over steps: split steps cost/w + sync(w), others cost
 *   inter(w)       max(critical path, total / w) + dispatch per step
 *   inter+intra(w) inter(w) where the heavy steps on the critical path run
 *                  intra-op with the workers the graph's width leaves idle
 *   replica        with jobs queued behind this one: each worker runs its
 *                  own job, so this one costs total but the machine
 *                  finishes the queue w times sooner (the estimate is the
 *                  amortised time per job: total / min(w, queued + 1));
 *                  with a batch that can be cut: total / r + copy costs
 *   inter+replica  r slices, each run inter-op on w / r workers
 *
 * Seed 002's rules are the filter on the candidates, the estimates choose
 * among those that remain:
 *   1. independent jobs (others of the same kind queued) -> replicas;
 *   2. a graph with synchronous (batch-coupling) nodes -> no replica split:
 *      inter + intra;
 *   3. otherwise -> inter + replicas (a batch split where the graph allows).
 * A requested mode is honoured (with the workers it can use); the estimates
 * are reported either way.
 */
#ifndef GXD_POLICY_H
#define GXD_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "gexec/client.h"

/* Most workers one job may use (and entries in the sync table). */
#define GXD_MAX_TEAM 256

/* What the policy knows of one job's plan. Costs in microseconds: measured
 * per-step times from earlier runs where present, else the schema's FLOP
 * and byte estimates converted with the machine's rates. */
typedef struct gxd_policy_job {
    double total_us;      /* Σ step costs: the sequential time */
    double critical_us;   /* longest dependency path through the steps */
    double split_us;      /* part of total_us in steps intra-op may split */
    double split_crit_us; /* part of critical_us in such steps */
    size_t n_steps;       /* steps that run (folded ones excluded) */
    size_t n_split;       /* steps intra-op would split */
    int width;            /* most steps that can run at once */
    long long batch;      /* > 0: axis-0 size the job may be cut along */
    size_t sync_steps;    /* steps that mix samples (seed 002 sync nodes) */
    double io_bytes;      /* bytes of the job's inputs and outputs (a split copies them) */
    bool dynamic;         /* has dynamic or control-flow steps */
} gxd_policy_job;

/* The machine right now, and its measured overheads. */
typedef struct gxd_policy_machine {
    int workers;       /* workers this job can use now, the caller included (>= 1) */
    int workers_total; /* workers the daemon owns */
    size_t queued;     /* jobs waiting in the queue */
    /* sync_us[w]: one synchronisation of a team of w workers (post work,
     * every member finishes, the leader sees it), measured at start;
     * sync_us[1] = 0. Entries beyond workers_total are unused. */
    const double *sync_us;
    double dispatch_us; /* handing one ready step to another worker */
    double copy_gbps;   /* memory copy rate, for the slices of a split */
} gxd_policy_machine;

typedef struct gxd_policy_choice {
    gx_mode mode;
    int workers;  /* workers the job runs on (1 for seq and queued replicas) */
    int replicas; /* copies of the graph (slices of the batch); 1: no split */
    /* Estimated completion time per mode (GX_MODE_AUTO unused); < 0 where
     * the mode does not apply to this job. */
    double est_us[GX_MODE_COUNT];
    char reason[160];
} gxd_policy_choice;

/* Estimate every mode for the job on the machine and choose. requested:
 * GX_MODE_AUTO, or a mode the client asked for (then it is used, with the
 * most workers it can use, even if another would be cheaper; a replica
 * split needs job->batch > 0, else requested replicas run as one copy on one
 * worker). Never fails. */
void gxd_policy_choose(const gxd_policy_job *job, const gxd_policy_machine *m, gx_mode requested,
                       gxd_policy_choice *out);

#endif
