/*
 * The graph compiler: a numbered list of passes (compile.c) turns a verified
 * graph and the concrete shapes of its inputs into an executable plan:
 *
 *   1. verify   structure, names, ops, arity, attributes, acyclicity, limits
 *   2. infer    dtypes and shapes of every value from the op schemas
 *   3. memplan  liveness-based buffer assignment: each value gets a logical
 *               buffer number and an offset relative to an arena base
 *   4. plan     the step list in dependency order with the kernel per step
 *
 * A plan is immutable once built and shared by every job (and worker) that
 * runs the graph with those input shapes; each job brings its own arena.
 */
#ifndef GXD_COMPILE_H
#define GXD_COMPILE_H

#include "ops/op.h"

typedef enum gxd_value_kind {
    GXD_VALUE_INPUT,  /* graph input: copied into the arena per job */
    GXD_VALUE_CONST,  /* constant: read in place from the graph */
    GXD_VALUE_TEMP,   /* produced by a step, lives in the arena */
} gxd_value_kind;

typedef struct gxd_value {
    const char *name; /* borrowed from the graph */
    gxd_value_kind kind;
    gx_view view;     /* dtype, shape, numel; data set for constants only */
    size_t nbytes;
    int def;          /* step that produces it; -1 for inputs and constants */
    int last_use;     /* last step reading it; n_steps if a graph output */
    int buffer;       /* logical buffer number; -1 for constants */
    size_t offset;    /* from the arena base */
} gxd_value;

typedef struct gxd_step {
    gx_op op;
    const gx_node *node; /* borrowed from the graph */
    gx_attrval attr[GX_MAX_ATTRS];
    int n_in, n_out;
    int *in;  /* value indices; -1 for an omitted optional input */
    int *out;
    gx_kernel_fn kernel;
    gx_cost cost;
} gxd_step;

typedef struct gxd_plan {
    size_t n_values, n_steps;
    gxd_value *values;
    gxd_step *steps;
    size_t n_inputs, n_outputs;
    int *inputs;  /* value index of graph input i */
    int *outputs; /* value index of graph output i */
    size_t n_buffers;
    size_t arena_bytes; /* peak: size of one arena */
    size_t naive_bytes; /* sum of all buffer sizes (no reuse), for comparison */
    double flops;
} gxd_plan;

typedef struct gxd_compile_limits {
    int64_t max_nodes;
    int64_t max_tensor_bytes;
    int64_t max_arena_bytes;
} gxd_compile_limits;

/* Pass 1 alone: is the graph well formed, independent of input shapes?
 * GX_OK, or GX_EGRAPH / GX_EOP / GX_EATTR / GX_ELIMIT with a message naming
 * the node and the problem. */
int gxd_verify(const gx_graph *g, const gxd_compile_limits *lim, char *err, size_t errlen);

/* Run every pass for the given input shapes (in graph input order; a
 * symbolic declared dim takes the given size). *out is a new plan owned by
 * the caller, borrowing from g (which must outlive it). */
int gxd_compile(const gx_graph *g, const gx_view *inputs, const gxd_compile_limits *lim,
                gxd_plan **out, char *err, size_t errlen);
void gxd_plan_destroy(gxd_plan **p);

/* Pass 3 on its own, for tests: assign offsets to values given their
 * nbytes/def/last_use; sets buffer, offset, and returns the arena size. */
size_t gxd_memplan_assign(gxd_value *values, size_t n_values, size_t *n_buffers);

#endif
