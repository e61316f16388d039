/* Seed 001's layout assignment. See layout.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/compile/layout.h"
#include "gexec/status.h"

static double s_count(const gxd_layout_problem *pb, int op)
{
    return pb->count ? pb->count[op] : 1.0;
}

static double s_edge_count(const gxd_layout_problem *pb, int e)
{
    return pb->edge_count ? pb->edge_count[e] : s_count(pb, pb->edge[e].to);
}

static double s_reorder(const gxd_layout_problem *pb, int e, int a, int b)
{
    size_t L = (size_t)pb->n_layouts;
    return pb->reorder[((size_t)e * L + (size_t)a) * L + (size_t)b] * s_edge_count(pb, e);
}

static double s_op(const gxd_layout_problem *pb, int op, int l)
{
    if (pb->fixed && pb->fixed[op] >= 0 && pb->fixed[op] != l)
        return INFINITY;
    return pb->cost[(size_t)op * (size_t)pb->n_layouts + (size_t)l] * s_count(pb, op);
}

double gxd_layout_cost(const gxd_layout_problem *pb, const int *choice)
{
    double t = 0;
    for (int op = 0; op < pb->n_ops; op++)
        t += s_op(pb, op, choice[op]);
    for (int e = 0; e < pb->n_edges; e++)
        t += s_reorder(pb, e, choice[pb->edge[e].from], choice[pb->edge[e].to]);
    return t;
}

/* The part of the total that depends on op's layout l (the others fixed). */
static double s_local(const gxd_layout_problem *pb, const int *choice, int op, int l)
{
    double t = s_op(pb, op, l);
    for (int e = 0; e < pb->n_edges; e++) {
        if (pb->edge[e].from == op)
            t += s_reorder(pb, e, l, choice[pb->edge[e].to]);
        else if (pb->edge[e].to == op)
            t += s_reorder(pb, e, choice[pb->edge[e].from], l);
    }
    return t;
}

static bool s_valid(const gxd_layout_problem *pb)
{
    if (pb->n_ops < 0 || pb->n_layouts < 1 || pb->n_layouts > GXD_LAYOUT_MAX || pb->n_edges < 0 ||
        (pb->n_ops && !pb->cost) || (pb->n_edges && (!pb->edge || !pb->reorder)))
        return false;
    for (int e = 0; e < pb->n_edges; e++)
        if (pb->edge[e].from < 0 || pb->edge[e].from >= pb->n_ops || pb->edge[e].to < 0 ||
            pb->edge[e].to >= pb->n_ops)
            return false;
    for (int op = 0; op < pb->n_ops; op++) {
        if (pb->fixed && pb->fixed[op] >= pb->n_layouts)
            return false;
        bool any = false;
        for (int l = 0; l < pb->n_layouts; l++)
            any = any || isfinite(s_op(pb, op, l));
        if (!any)
            return false;
    }
    return true;
}

static bool s_fixed(const gxd_layout_problem *pb, int op)
{
    return pb->fixed && pb->fixed[op] >= 0;
}

/* Every assignment of the ops that are not fixed, as a number in base
 * n_layouts. */
static void s_enumerate(const gxd_layout_problem *pb, int *choice, int *cur, double *best)
{
    for (int op = 0; op < pb->n_ops; op++)
        cur[op] = s_fixed(pb, op) ? pb->fixed[op] : 0;
    *best = INFINITY;
    for (;;) {
        double t = gxd_layout_cost(pb, cur);
        if (t < *best) {
            *best = t;
            memcpy(choice, cur, (size_t)pb->n_ops * sizeof *cur);
        }
        int op = 0;
        for (; op < pb->n_ops; op++) {
            if (s_fixed(pb, op))
                continue;
            if (++cur[op] < pb->n_layouts)
                break;
            cur[op] = 0;
        }
        if (op == pb->n_ops)
            return;
    }
}

/* Coordinate descent from choice: each op in turn takes the layout that
 * lowers the total, until none does. */
static void s_descend(const gxd_layout_problem *pb, int *choice)
{
    for (bool moved = true; moved;) {
        moved = false;
        for (int op = 0; op < pb->n_ops; op++) {
            int best = choice[op];
            double now = s_local(pb, choice, op, best);
            for (int l = 0; l < pb->n_layouts; l++) {
                double t = s_local(pb, choice, op, l);
                if (t < now && (isinf(now) || t < now - 1e-12 * fabs(now))) {
                    now = t;
                    best = l;
                }
            }
            if (best != choice[op]) {
                choice[op] = best;
                moved = true;
            }
        }
    }
}

/* Descent from each op's best layout alone, and from every uniform
 * assignment; the cheapest result. So the answer is never worse than
 * running everything in one layout. */
static int s_search(const gxd_layout_problem *pb, int *choice, double *total)
{
    int *cur = malloc(((size_t)pb->n_ops + 1) * sizeof *cur);
    if (!cur)
        return GX_ENOMEM;
    *total = INFINITY;
    for (int start = -1; start < pb->n_layouts; start++) {
        for (int op = 0; op < pb->n_ops; op++) {
            int best = start;
            if (start < 0) {
                best = 0;
                for (int l = 1; l < pb->n_layouts; l++)
                    if (s_op(pb, op, l) < s_op(pb, op, best))
                        best = l;
            }
            cur[op] = best;
        }
        s_descend(pb, cur);
        double t = gxd_layout_cost(pb, cur);
        if (t < *total) {
            *total = t;
            memcpy(choice, cur, (size_t)pb->n_ops * sizeof *cur);
        }
    }
    free(cur);
    return GX_OK;
}

/* Exact answer when the ops and edges form a forest (ignoring direction:
 * chains and trees, the usual shape of a network's layout-sensitive part):
 * dynamic programming from the leaves, best[op][l] = the cheapest cost of
 * op's subtree with op in layout l. 1: solved; 0: not a forest; < 0: error. */
static int s_forest(const gxd_layout_problem *pb, int *choice, double *total)
{
    const int n = pb->n_ops, L = pb->n_layouts;
    int *parent = malloc(((size_t)n + 1) * sizeof *parent);   /* edge index to the parent */
    int *order = malloc(((size_t)n + 1) * sizeof *order);     /* parents before children */
    int *adj_off = calloc((size_t)n + 2, sizeof *adj_off), *adj = NULL;
    double *best = malloc(((size_t)n * (size_t)L + 1) * sizeof *best);
    int *arg = malloc(((size_t)n * (size_t)L + 1) * sizeof *arg); /* child's layout per parent's */
    int rc = GX_ENOMEM;
    if (!parent || !order || !adj_off || !best || !arg)
        goto out;
    if (!(adj = malloc(((size_t)pb->n_edges * 2 + 1) * sizeof *adj)))
        goto out;
    for (int e = 0; e < pb->n_edges; e++)
        adj_off[pb->edge[e].from + 1]++, adj_off[pb->edge[e].to + 1]++;
    for (int op = 0; op < n; op++)
        adj_off[op + 1] += adj_off[op];
    {
        int *fill = order; /* borrowed as a cursor */
        for (int op = 0; op < n; op++)
            fill[op] = adj_off[op];
        for (int e = 0; e < pb->n_edges; e++) {
            adj[fill[pb->edge[e].from]++] = e;
            adj[fill[pb->edge[e].to]++] = e;
        }
    }
    for (int op = 0; op < n; op++)
        parent[op] = -2; /* unvisited */
    int n_order = 0;
    rc = 0;
    for (int root = 0; root < n; root++) {
        if (parent[root] != -2)
            continue;
        parent[root] = -1;
        order[n_order++] = root;
        for (int k = n_order - 1; k < n_order; k++) { /* breadth first */
            int op = order[k];
            for (int a = adj_off[op]; a < adj_off[op + 1]; a++) {
                int e = adj[a], other = pb->edge[e].from == op ? pb->edge[e].to : pb->edge[e].from;
                if (e == parent[op])
                    continue;
                if (parent[other] != -2 || other == op)
                    goto out; /* a cycle or a second edge between two ops */
                parent[other] = e;
                order[n_order++] = other;
            }
        }
    }
    /* children before parents: best[op][l] = own cost + Σ over children c
     * of min over c's layout of (best[c][lc] + reorder on the edge) */
    for (int k = n_order - 1; k >= 0; k--) {
        int op = order[k];
        for (int l = 0; l < L; l++)
            best[op * L + l] = s_op(pb, op, l);
        for (int a = adj_off[op]; a < adj_off[op + 1]; a++) {
            int e = adj[a], c = pb->edge[e].from == op ? pb->edge[e].to : pb->edge[e].from;
            if (e == parent[op])
                continue;
            for (int l = 0; l < L; l++) {
                double m = INFINITY;
                int at = 0;
                for (int lc = 0; lc < L; lc++) {
                    double r = pb->edge[e].from == op ? s_reorder(pb, e, l, lc)
                                                      : s_reorder(pb, e, lc, l);
                    if (best[c * L + lc] + r < m)
                        m = best[c * L + lc] + r, at = lc;
                }
                best[op * L + l] += m;
                arg[c * L + l] = at;
            }
        }
    }
    *total = 0;
    for (int k = 0; k < n_order; k++) {
        int op = order[k];
        if (parent[op] == -1) {
            int b = 0;
            for (int l = 1; l < L; l++)
                if (best[op * L + l] < best[op * L + b])
                    b = l;
            choice[op] = b;
            *total += best[op * L + b];
        } else {
            const gxd_layout_edge *e = &pb->edge[parent[op]];
            choice[op] = arg[op * L + choice[e->from == op ? e->to : e->from]];
        }
    }
    rc = 1;
out:
    free(parent), free(order), free(adj_off), free(adj), free(best), free(arg);
    return rc;
}

int gxd_layout_solve(const gxd_layout_problem *pb, int *choice, gxd_layout_result *res)
{
    memset(res, 0, sizeof *res);
    if (!s_valid(pb))
        return GX_EINVAL;
    int rc = s_forest(pb, choice, &res->total);
    if (rc != 0) {
        res->exact = rc > 0;
        return rc > 0 ? GX_OK : rc;
    }
    int n_free = 0;
    for (int op = 0; op < pb->n_ops; op++)
        n_free += !s_fixed(pb, op);
    double space = pow((double)pb->n_layouts, (double)n_free);
    if (space <= GXD_LAYOUT_EXACT) {
        int *cur = malloc(((size_t)pb->n_ops + 1) * sizeof *cur);
        if (!cur)
            return GX_ENOMEM;
        s_enumerate(pb, choice, cur, &res->total);
        free(cur);
        res->exact = true;
        return GX_OK;
    }
    return s_search(pb, choice, &res->total);
}

double gxd_layout_expected(unsigned long long node_runs, unsigned long long graph_runs)
{
    return graph_runs ? (double)node_runs / (double)graph_runs : 1.0;
}
