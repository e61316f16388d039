/*
 * Seed 001: the layout assignment with the smallest expected cost.
 *
 * Each layout-sensitive op (a variable) runs in one of n_layouts layouts,
 * at cost[op][layout] per execution (INFINITY: no kernel for it). An edge
 * from producer to consumer costs a reorder, reorder[edge][from][to] per
 * execution of the edge, where the consumer reads the value in another
 * layout than the producer's (usually its own: none when from == to, but
 * a consumer may read an input in another layout than it runs in, and
 * then [edge][to][to] is not 0). Ops run count[op]
 * times per job and edges edge_count[edge] times: the expected executions
 * from the profile (gxd_layout_expected), all 1 without one. The solver
 * minimises
 *
 *     Σ cost(op, layout) × count(op) + Σ reorder(edge, from, to) × count(edge)
 *
 * exactly by dynamic programming when ops and edges form a forest (chains
 * and trees, ignoring direction), else exactly by enumeration while the
 * assignments are few (n_layouts^(ops not fixed) up to GXD_LAYOUT_EXACT),
 * else by coordinate descent (each op in turn takes the layout that lowers
 * the total, until none does) started from each
 * op's best layout alone and from every uniform assignment, keeping the
 * cheapest, so never worse than one layout everywhere; the result says
 * which.
 */
#ifndef GXD_LAYOUT_H
#define GXD_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/op.h"

#define GXD_LAYOUT_MAX 8          /* layouts per problem */
#define GXD_LAYOUT_EXACT 1000000  /* most assignments enumerated */

typedef struct gxd_layout_edge {
    int from, to; /* ops */
} gxd_layout_edge;

typedef struct gxd_layout_problem {
    int n_ops, n_layouts;
    const double *cost;  /* [n_ops * n_layouts] */
    const double *count; /* [n_ops]; NULL: all 1 */
    int n_edges;
    const gxd_layout_edge *edge;
    const double *reorder;    /* [n_edges * n_layouts * n_layouts]; [e][a][a] is 0 but
                               * where the consumer in layout a reads the value in
                               * another (a first Conv reading its image in NCHW) */
    const double *edge_count; /* [n_edges]; NULL: the consumer's count */
    const int *fixed;         /* [n_ops]: a layout the op must take, or -1; NULL: none */
} gxd_layout_problem;

typedef struct gxd_layout_result {
    double total; /* the expected cost of the assignment (INFINITY: none feasible) */
    bool exact;   /* enumerated every assignment */
} gxd_layout_result;

/* Total expected cost of the assignment choice[n_ops]. */
double gxd_layout_cost(const gxd_layout_problem *pb, const int *choice);

/* Fill choice[n_ops] with the cheapest assignment found. GX_OK, or
 * GX_EINVAL for a malformed problem (sizes, indices, an op with no finite
 * layout). */
int gxd_layout_solve(const gxd_layout_problem *pb, int *choice, gxd_layout_result *res);

/* Expected executions per job of a node from its profile: node_runs /
 * graph_runs. Structured control flow gives seed 001's formulas: a branch of
 * an If runs P(branch) = runs(branch) / runs(If) times per run of the If,
 * a Loop body trip_count = runs(body) / runs(Loop) times per run of the
 * Loop, so runs(node) / runs(graph) is runs(If or Loop) / runs(graph)
 * times that. 1 without a profile (graph_runs == 0). */
double gxd_layout_expected(unsigned long long node_runs, unsigned long long graph_runs);

/* ---- the layout pass (daemon/compile/layout.c) ----
 *
 * Its problem: one op per step that touches a 4-D float32 value (the
 * layout-sensitive ops with kernels in several layouts, elementwise ops
 * that follow them, and every other step, fixed to plain), one for the
 * graph's inputs (fixed to the layouts they arrive in) and one for its
 * outputs (fixed to plain); one edge per value from its producer to each
 * consumer, with the cost of a reorder between any two layouts. Cost of an
 * op in a layout, per execution: its time in that layout measured by
 * earlier runs (the profile's "<node>@<layout>" entries), else a time
 * measured in another layout scaled by the layouts' factors for the op
 * (its layouts->factor), else the schema's estimate times the factor; its
 * count the expected executions per job from the profile. */

/* One op of the problem, as explain prints it. */
typedef struct gxd_layout_op {
    const char *node;  /* node name (borrowed from the graph), "(inputs)", "(outputs)" */
    gx_op op;          /* GX_OP_COUNT for the inputs and outputs */
    bool free;         /* the pass could choose its layout */
    int fixed;         /* the layout it must take, or -1 */
    double cost[GX_LAYOUT_COUNT]; /* microseconds per execution; INFINITY: no kernel */
    double est;                   /* the schema's estimate of one run (plain) */
    double factor[GX_LAYOUT_COUNT]; /* the device's layouts->factor; INFINITY: no kernel */
    double count;      /* expected executions per job */
    int chosen;
    char why[160];     /* the layouts it cannot take, and why */
    /* An If or Loop (seed 001 on structured control flow): its cost in
     * layout l is Σ over its subgraphs of ratio × sub_cost[g][l], the
     * expected cost of one run of subgraph g compiled with its captured
     * values in l, and ratio = runs(subgraph) / runs(step) from the
     * profile: a branch's probability, a body's trip count (1 without). */
    int n_sub;
    const char *sub_attr[2];
    const gx_graph *sub[2];
    double sub_cost[2][GX_LAYOUT_COUNT];
    double ratio[2];
} gxd_layout_op;

typedef struct gxd_layout_rec {
    size_t n_ops, n_edges;
    gxd_layout_op *ops;
    gxd_layout_edge *edges;
    const char **edge_value; /* the value each edge carries (borrowed) */
    double *reorder;         /* [edge][from][to], microseconds per execution */
    double total;            /* the expected cost per job of the choice */
    double plain_total;      /* ... of every op plain */
    bool exact;              /* the solver's answer is the optimum */
    size_t n_reorders;       /* reorder steps inserted */
    size_t n_packed;         /* elementwise ops' constant operands rewritten for a layout */
    bool estimates_only;     /* measured times were not used (compile limits) */
    char why[96];            /* why the pass left every value plain without solving, or "" */
} gxd_layout_rec;

void gxd_layout_rec_destroy(struct gxd_layout_rec **r);

#endif
