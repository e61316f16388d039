/*
 * State shared by the compiler passes while one plan is built. Internal to
 * daemon/compile/.
 */
#ifndef GXD_PASSES_H
#define GXD_PASSES_H

#include "daemon/compile/compile.h"

typedef struct gxd_names {
    size_t cap; /* power of two */
    const char **key;
    int *val;
} gxd_names;

typedef struct gxd_cstate {
    const gx_graph *g;
    const gxd_compile_limits *lim;
    const gx_view *inputs; /* concrete input shapes; NULL when only verifying */
    const char *const *captured; /* a subgraph's captured outer values, by name */
    const bool *captured_const;  /* which of them are the enclosing plan's constants, or NULL */
    size_t n_captured;
    bool slice; /* a slice of the batch: declared axis 0 of plain inputs is free */
    const gxd_plan *whole; /* a slice's plan of the whole batch (it outlives the slice) */
    gxd_plan *plan;
    gxd_names names; /* value name -> index in plan->values */
    char *err;
    size_t errlen;
    /* device half steps (gxd_step.dev_half): off for the compile's second
     * try; half_left: partition left one on the fallback (try again) */
    bool no_dev_half;
    bool half_left;
} gxd_cstate;

/* The passes, in order (see compile.h). Each returns GX_OK or an error
 * status with a message in st->err. */
int gxd_pass_verify(gxd_cstate *st);
int gxd_pass_infer(gxd_cstate *st);
/* Pass 2b (daemon/compile/widen.c): float16 and bfloat16 steps without a
 * kernel in that dtype compute in float32. */
int gxd_pass_widen(gxd_cstate *st);

/* Does a device offered to the compile (lim->part, with half_kernels) take
 * step s at its 16-bit float dtype: inputs in, outputs out (the half
 * views)? daemon/compile/widen.c. */
bool gxd_widen_device_half(const gxd_cstate *st, const gxd_step *s, const gx_view *in,
                           const gx_view *out);

/* Infer's second try at a step whose schema refused its 16-bit float
 * inputs (GX_EDTYPE), daemon/compile/widen.c. */
typedef struct gxd_widen_try {
    gx_dtype half;  /* float16 or bfloat16: the dtype the inputs had */
    bool outs_half; /* a float32 output is a half value of the graph */
    gx_view orig[GX_MAX_OP_INPUTS];
    void *tmp[GX_MAX_OP_INPUTS]; /* converted data of known inputs */
} gxd_widen_try;
/* Is dt float16 or bfloat16? */
bool gxd_widen_half(gx_dtype dt);
/* in[] (step s's input views) with every half input as float32; the data
 * of a known one converted (all of them with all_data, else those infer
 * reads the values of) into buffers t holds. false, in[] untouched, when
 * s is a Cast or CastLike, has no half input, both kinds, or memory ran
 * out. Then gxd_widen_done (keep the float32 views) or gxd_widen_undo
 * (back to the originals) frees the buffers. */
bool gxd_widen_views(const gxd_step *s, gx_view *in, bool all_data, gxd_widen_try *t);
void gxd_widen_done(const gxd_step *s, gxd_widen_try *t);
void gxd_widen_undo(const gxd_step *s, gx_view *in, gxd_widen_try *t);
/* n elements of half dtype at src into float32 at dst (exact), and back
 * (rounded to nearest even). */
void gxd_widen_to_f32(const void *src, gx_dtype half, float *dst, int64_t n);
void gxd_widen_from_f32(const float *src, gx_dtype half, void *dst, int64_t n);
/* Pass 3 (daemon/compile/rewrite.c): algebraic rewrites of the steps. */
int gxd_pass_rewrite(gxd_cstate *st);
/* Pass 4 (daemon/compile/partition.c): devices, partitions and copies. */
int gxd_pass_partition(gxd_cstate *st);
/* Pass 5 (daemon/compile/layout.c). */
int gxd_pass_layout(gxd_cstate *st);
/* Pass 6 (daemon/compile/prepare.c). */
int gxd_pass_prepare(gxd_cstate *st);
/* A plan read from an artifact (no passes ran): gives each implementation
 * choice its step's signature, as a compile does (the re-planner's check),
 * and asks t what the prepare pass asks it. False with why when t now
 * names another implementation than the plan runs for one of them. */
bool gxd_prepare_choices_current(gxd_plan *p, struct gxd_tune *t, char *why, size_t len);
/* Releases the shared constants plan p holds (gxd_plan_destroy). */
void gxd_shared_drop(gxd_plan *p);
/* Pass 7 (daemon/compile/fuse.c). */
int gxd_pass_fuse(gxd_cstate *st);
/* The batch rule of fused step s (gx_op_batch_separable for the steps it
 * replaced, judged together): in_batched[i] for its input i; sets
 * out_batched[0]. */
bool gxd_fuse_batch_separable(const gxd_plan *p, const gxd_step *s, const bool *in_batched,
                              bool *out_batched);
int gxd_pass_memplan(gxd_cstate *st);
int gxd_pass_dag(gxd_cstate *st);
int gxd_pass_plan(gxd_cstate *st);
/* Pass 10 (daemon/compile/batch.c): never fails; gxd_plan_batch on st->plan. */
int gxd_pass_batch(gxd_cstate *st);

/* Seed 002's replica split of a finished plan: sets p->batch, p->sync_steps
 * and p->batch_why (see compile.h) and touches nothing else. */
void gxd_plan_batch(gxd_plan *p);

/* Growing list of names (borrowed strings). */
typedef struct gxd_strv {
    const char **v;
    size_t n, cap;
} gxd_strv;

/* Names g uses but does not define itself (as input, constant or node
 * output), in order of first use, nested subgraphs included: the values a
 * subgraph captures from its enclosing graphs. Appended to *out without
 * duplicates. GX_OK or GX_ENOMEM. */
int gxd_free_names(const gx_graph *g, gxd_strv *out);

/* Rough machine rates for estimates before anything was measured. */
#define GXD_EST_FLOPS_PER_US 20000.0 /* 20 GFLOP/s */
#define GXD_EST_BYTES_PER_US 8000.0  /* 8 GB/s */
#define GXD_EST_STEP_US 0.05         /* dispatch of one kernel */

/* Estimated time of one run of a step of this cost, in microseconds. */
static inline double gxd_est_us(const gx_cost *c)
{
    double f = c->flops / GXD_EST_FLOPS_PER_US, b = c->bytes / GXD_EST_BYTES_PER_US;
    return GXD_EST_STEP_US + (f > b ? f : b);
}

/* n rounded up to a multiple of GX_ALIGN: a value's room in an arena. */
static inline size_t gxd_aligned(size_t n)
{
    return (n + GX_ALIGN - 1) / GX_ALIGN * GX_ALIGN;
}

/* nbytes of zeroed, GX_ALIGN-aligned memory the plan owns (folded values,
 * keyed copies, names of values a pass adds), freed with the plan; NULL on
 * ENOMEM. */
void *gxd_plan_own(gxd_plan *p, size_t nbytes);
/* Frees m (nbytes) if gxd_plan_own gave it to p: true; false (nothing
 * freed) if p does not own it (a graph's or another plan's memory). */
bool gxd_plan_disown(gxd_plan *p, void *m, size_t nbytes);
/* Would the plan still fit lim->max_plan_bytes with more bytes (0: as it
 * is, at the end of a pass)? GX_OK, or GX_ELIMIT naming the pass, the need
 * and the limit. */
int gxd_plan_room(gxd_cstate *st, const char *pass, size_t more);

/* *s = a step a pass inserts to move value v into value c (a copy
 * between devices, a reorder between layouts): op Identity, one input and
 * one output, a synthetic node named "<what>:<c's name>" that the plan
 * owns, the cost of reading and writing v, on device 0 outside every
 * partition. GX_OK or GX_ENOMEM (then *s holds what to free). */
int gxd_step_move(gxd_plan *p, const char *what, int v, int c, gxd_step *s);

/* A plan's empty cache of slice plans (gxd_plan_slice), which
 * gxd_plan_destroy frees; NULL on ENOMEM. */
struct gxd_slices *gxd_slices_new(void);

/* Name table: -1 if absent. */
int gxd_names_get(const gxd_names *t, const char *name);
/* Insert; false if present already or ENOMEM (*dup tells which). */
bool gxd_names_put(gxd_names *t, const char *name, int val, bool *dup);

#endif
