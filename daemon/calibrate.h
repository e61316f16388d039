/*
 * Calibration: what the policy needs to know of this machine, measured
 * once when the pool starts (see gxd_policy_machine in daemon/policy.h).
 */
#ifndef GXD_CALIBRATE_H
#define GXD_CALIBRATE_H

#include "daemon/ctx.h"
#include "daemon/policy.h"
#include "daemon/team.h"

typedef struct gxd_calibration {
    /* sync_us[w]: one synchronisation of a team of w workers, 2 <= w <= team_max */
    double sync_us[GXD_MAX_TEAM + 1];
    double dispatch_us;  /* handing one ready step to another worker */
    double join_us;      /* waking idle workers into a team */
    double join_spin_us; /* join_us when the helpers are spinning (scheduler.spin_us) */
    double copy_gbps;    /* memory copy rate */
} gxd_calibration;

/* Measure the cost of one synchronisation of a team of w workers (a chain
 * of tiny steps, each split w ways, against the same chain on one worker),
 * of handing a step to another worker (the chain run inter-op), of waking
 * a team, and the memory copy rate; log them. The caller leads, the team's
 * idle workers help: call it once at start, with the workers started and
 * no job queued. Where a measurement cannot be made, out keeps a default. */
void gxd_calibrate(gxd_ctx *ctx, gxd_team *team, int team_max, gxd_calibration *out);

#endif
