/*
 * Executors: run a compiled plan for one job. A job's frame says where every
 * value of the plan lives for this run (its arena, the plan's constants, the
 * heap for dynamic values); gxd_exec_step runs one step of it, whatever its
 * kind (kernel, dynamic, control flow), or one share of a kernel step.
 * The sequential executor runs the steps in order; gxd_exec_par runs every
 * parallel mode (intra-op, inter-op, replicas and their combinations) over
 * a team of workers. The policy (daemon/policy.h) chooses per job.
 */
#ifndef GXD_EXEC_H
#define GXD_EXEC_H

#include <stdatomic.h>
#include <time.h>

#include "daemon/compile/compile.h"

/* What stops a job between two steps. */
typedef struct gxd_exec_stop {
    atomic_bool *cancel; /* set by CANCEL or shutdown */
    int64_t deadline_us; /* CLOCK_MONOTONIC; 0 = none */
} gxd_exec_stop;

/* GX_ECANCELLED, GX_ETIMEDOUT or GX_OK: whether the job must stop now. */
int gxd_exec_should_stop(const gxd_exec_stop *stop);

/* Device memory of one run: the arena of each device without host memory
 * (plan->dev_arena_bytes[d], or dev_dag_arena_bytes[d] in the DAG layout)
 * and the queue its steps go on (gx_backend.queue_new; NULL for a device
 * without queues). Index as plan->devices; entry 0 (the host) unused. */
typedef struct gxd_devmem {
    void *arena[GXD_MAX_DEVICES];
    void *queue[GXD_MAX_DEVICES];
} gxd_devmem;

/* One run of a plan. */
typedef struct gxd_frame {
    const gxd_plan *plan;
    void *arena;  /* plan->arena_bytes, GX_ALIGN-aligned, owned by the caller */
    gxd_devmem dm; /* the other devices' arenas and queues */
    bool own_dm;   /* made by the frame (freed by fini), else the caller's */
    gx_view *val; /* every value for this run: dtype, shape, data */
    void **heap;  /* data of dynamic values, owned by the frame */
    const gxd_compile_limits *lim; /* for dynamic sizes and subgraph compiles */
    const gxd_exec_stop *stop;
    char *err; /* why a step failed */
    size_t errlen;
    /* The run's string heap (docs/strings.md): the strings its kernels
     * make, bounded by lim->max_tensor_bytes, freed at fini; a subgraph's
     * frame borrows its parent's (own_strs false), so that strings it
     * gives back outlive it. */
    gx_strheap *strs;
    bool own_strs;
    /* After gxd_exec_seq: the nanoseconds the devices with marks
     * (ops/backend.h: a GPU) spent on the run's kernel steps, its
     * subgraphs' included; 0 when none was timed (the CPU's steps, the
     * DAG executors). */
    int64_t device_ns;
} gxd_frame;

/* Lays the plan over arena (plan->arena_bytes). Graph input i is read
 * where inputs[i] is (no kernel writes its inputs), which must then stay
 * unchanged until the run ends; an input not aligned to its element size
 * is copied into the arena. GX_OK or GX_ENOMEM (f->err says so). */
int gxd_frame_init(gxd_frame *f, const gxd_plan *plan, void *arena, const gx_view *inputs,
                   const gxd_compile_limits *lim, const gxd_exec_stop *stop, char *err,
                   size_t errlen);
/* The same with the DAG executors' layout when dag is true (plan->dag_ok;
 * arena of plan->dag_arena_bytes). */
int gxd_frame_init_ex(gxd_frame *f, const gxd_plan *plan, void *arena, bool dag,
                      const gx_view *inputs, const gxd_compile_limits *lim,
                      const gxd_exec_stop *stop, char *err, size_t errlen);
/* The same with the memory of the plan's other devices: dm (owned by the
 * caller, sized for the layout dag chooses), or NULL for arenas and queues
 * the frame makes through the devices' tables (and fini frees). */
int gxd_frame_init_dev(gxd_frame *f, const gxd_plan *plan, void *arena, const gxd_devmem *dm,
                       bool dag, const gx_view *inputs, const gxd_compile_limits *lim,
                       const gxd_exec_stop *stop, char *err, size_t errlen);
/* Makes f (just initialised) use parent's string heap instead of its own. */
void gxd_frame_borrow_strs(gxd_frame *f, const gxd_frame *parent);
/* Frees what the frame owns (not the arena). Accepts a zeroed frame. */
void gxd_frame_fini(gxd_frame *f);
/* Output i of the plan: its view for this run (data valid until fini). */
const gx_view *gxd_frame_output(const gxd_frame *f, size_t i);

/* Runs step s of f->plan: the kernel; for a dynamic step, infer and output
 * allocation first; for control flow, its subgraphs. GX_OK, or an error
 * with a message in f->err. */
int gxd_exec_step(gxd_frame *f, size_t s);
/* Share ith of nth of step s (nth > 1 only for kernel steps that are not
 * dynamic); coop: what the run's shares hold in common (gx_coop, zeroed
 * before its first share), NULL with nth == 1. */
int gxd_exec_step_share(gxd_frame *f, size_t s, int ith, int nth, gx_coop *coop);

/* Runs control-flow step s (If, Loop, Scan), or a sequence or optional op
 * through gxd_exec_values: daemon/exec/control.c. */
int gxd_exec_control(gxd_frame *f, const gxd_step *s);
/* Runs subgraph attr of step s on `formal` (its declared inputs) plus the
 * values it captures from f; outs[0..n_outputs) become heap copies of its
 * outputs (the caller frees them with gxd_view_free). */
int gxd_exec_subgraph(gxd_frame *f, const gxd_step *s, const char *attr, const gx_view *formal,
                      size_t n_formal, gx_view *outs);

/* Sequence and optional values (daemon/exec/values.c). */
/* Runs the sequence or optional op of step s. */
int gxd_exec_values(gxd_frame *f, const gxd_step *s);
/* Frees what a heap view owns, by its kind (a tensor's bytes, a sequence
 * and its items; none owns nothing); sets v->data to NULL. */
void gxd_view_free(gx_view *v);
/* A heap copy of v in *out (a sequence deeply), for the caller to free. */
int gxd_view_clone(gxd_frame *f, const gx_view *v, gx_view *out);
/* Makes val (heap data now owned by the frame) value v of the frame,
 * freeing what v owned before. */
void gxd_frame_set(gxd_frame *f, int v, gx_view val);
/* Makes value v the same as *val, owned by whoever owns *val (values are
 * never changed once made, and the frame keeps them all until fini). */
void gxd_frame_alias(gxd_frame *f, int v, const gx_view *val);

/* The sequential executor: every step in order on the calling thread. */
int gxd_exec_seq(gxd_frame *f);

struct gxd_team;

/* How gxd_exec_par runs a job (exec_par.c). */
typedef struct gxd_par_cfg {
    int workers;         /* team size (>= 1): the caller and the helpers */
    bool dag;            /* independent steps at once (inter-op): every frame
                          * must use the DAG layout; else step order */
    bool split;          /* intra-op: heavy steps run as `workers` shares */
    double split_min_us; /* heavy: gxd_step_cost_us at least this */
} gxd_par_cfg;

/* Runs n frames (one per replica; each may have its own plan) on the
 * calling worker and up to cfg->workers - 1 helpers of team; *members: the
 * workers that took part. GX_OK, or the first error (message in err),
 * GX_ECANCELLED / GX_ETIMEDOUT. */
int gxd_exec_par(struct gxd_team *team, const gxd_par_cfg *cfg, gxd_frame *frames, int n,
                 int *members, char *err, size_t errlen);

/* A spin-wait's pause: lets the core's other thread run. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GXD_CPU_PAUSE() _mm_pause()
#else
#define GXD_CPU_PAUSE() ((void)0)
#endif

/* Monotonic clock, nanoseconds. */
static inline int64_t gxd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Step s's time on one worker: measured if it ran before, else the
 * schema's estimate (est_us). */
double gxd_step_cost_us(const gxd_plan *p, size_t s);
/* Record that step s took ns (on one worker, or summed over its shares). */
void gxd_step_record(const gxd_plan *p, size_t s, int64_t ns);
/* Counts a run of p; true when this run should time its steps (the first
 * few runs after the very first, then one in GXD_TIMING_EVERY). */
bool gxd_plan_wants_timing(const gxd_plan *p);
#define GXD_TIMING_EVERY 16

#endif
