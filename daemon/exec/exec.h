/*
 * Executors: run a compiled plan for one job over an arena the caller owns.
 * One executor per parallel mode, chosen per job by gxd_exec_choose. Only
 * the sequential executor is built so far; the table in exec.c is the seam
 * where the intra-op, inter-op and replica executors plug in, and a job
 * asking for one of them is refused with GX_EUNSUPPORTED until they exist.
 */
#ifndef GXD_EXEC_H
#define GXD_EXEC_H

#include <stdatomic.h>

#include "daemon/compile/compile.h"

typedef struct gxd_exec_choice {
    gx_mode mode;
    int workers;
    char reason[160];
} gxd_exec_choice;

/* Pick the mode for a job that requested `requested`. GX_EUNSUPPORTED with
 * a message if the requested mode is not available. */
int gxd_exec_choose(const gxd_plan *plan, gx_mode requested, gxd_exec_choice *out, char *err,
                    size_t errlen);

/* What stops a job between two steps. */
typedef struct gxd_exec_stop {
    atomic_bool *cancel; /* set by CANCEL or shutdown */
    int64_t deadline_us; /* CLOCK_MONOTONIC; 0 = none */
} gxd_exec_stop;

/* GX_ECANCELLED, GX_ETIMEDOUT or GX_OK: whether the job must stop now. */
int gxd_exec_should_stop(const gxd_exec_stop *stop);

/* Run plan over arena (plan->arena_bytes, GX_ALIGN-aligned). inputs[i] is
 * graph input i (data read once, copied into the arena). Returns GX_OK, or
 * GX_ECANCELLED / GX_ETIMEDOUT when stop says so between two steps. */
int gxd_exec_run(const gxd_plan *plan, const gxd_exec_choice *ch, void *arena,
                 const gx_view *inputs, const gxd_exec_stop *stop);

/* Where value v lives for this arena. */
void *gxd_exec_value_data(const gxd_plan *plan, void *arena, int v);

/* The sequential executor: every step in order on the calling thread. */
int gxd_exec_seq(const gxd_plan *plan, void *arena, const gx_view *inputs,
                 const gxd_exec_stop *stop);

#endif
