/*
 * Executors: run a compiled plan for one job. A job's frame says where every
 * value of the plan lives for this run (its arena, the plan's constants, the
 * heap for dynamic values); gxd_exec_step runs one step of it, whatever its
 * kind (kernel, dynamic, control flow). One executor per parallel mode,
 * chosen per job by gxd_exec_choose. Only the sequential executor is built
 * so far; the table in exec.c is the seam where the intra-op, inter-op and
 * replica executors plug in, and a job asking for one of them is refused
 * with GX_EUNSUPPORTED until they exist.
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

/* One run of a plan. */
typedef struct gxd_frame {
    const gxd_plan *plan;
    void *arena;  /* plan->arena_bytes, GX_ALIGN-aligned, owned by the caller */
    gx_view *val; /* every value for this run: dtype, shape, data */
    void **heap;  /* data of dynamic values, owned by the frame */
    const gxd_compile_limits *lim; /* for dynamic sizes and subgraph compiles */
    const gxd_exec_stop *stop;
    char *err; /* why a step failed */
    size_t errlen;
} gxd_frame;

/* Lays the plan over arena and copies inputs[i] (graph input i) into it.
 * GX_OK or GX_ENOMEM (f->err says so). */
int gxd_frame_init(gxd_frame *f, const gxd_plan *plan, void *arena, const gx_view *inputs,
                   const gxd_compile_limits *lim, const gxd_exec_stop *stop, char *err,
                   size_t errlen);
/* Frees what the frame owns (not the arena). Accepts a zeroed frame. */
void gxd_frame_fini(gxd_frame *f);
/* Output i of the plan: its view for this run (data valid until fini). */
const gx_view *gxd_frame_output(const gxd_frame *f, size_t i);

/* Runs step s of f->plan: the kernel; for a dynamic step, infer and output
 * allocation first; for control flow, its subgraphs. GX_OK, or an error
 * with a message in f->err. */
int gxd_exec_step(gxd_frame *f, size_t s);

/* Runs control-flow step s (If, Loop): daemon/exec/control.c. */
int gxd_exec_control(gxd_frame *f, const gxd_step *s);

/* Runs the whole plan with the chosen executor. GX_OK, GX_ECANCELLED /
 * GX_ETIMEDOUT when stop says so between two steps, or a step's error. */
int gxd_exec_run(const gxd_exec_choice *ch, gxd_frame *f);

/* The sequential executor: every step in order on the calling thread. */
int gxd_exec_seq(gxd_frame *f);

#endif
