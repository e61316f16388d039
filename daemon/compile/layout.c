/*
 * Pass 5, layout (seed 001). Contract: every static 4-D float32 value on
 * the CPU gets the layout (ops/layout.h) of the assignment with the
 * smallest expected cost per job,
 *
 *     Σ cost(op, layout) × expected executions(op) + reorder costs,
 *
 * that the solver (layout_solve.c) finds for the problem described in
 * layout.h. Then:
 *   - a step whose layout is not plain runs the kernel for it (its
 *     device's layouts table, ops/backend.h) and its outputs hold their
 *     physical shapes;
 *   - where a consumer's layout differs from its input's, a reorder step
 *     (after the producer, one per value and layout) makes the copy it
 *     reads; graph outputs are plain again;
 *   - constant operands of elementwise ops are rewritten to broadcast in
 *     their layout (owned by the plan); a Conv's weights are packed for
 *     its layout's kernel by the prepare pass, which comes next.
 * Inputs of a subgraph's plan may arrive in a layout (gx_view.layout):
 * they keep it. The problem and the choice stay in plan->layout for
 * explain and for gxd_plan_layout_stale. Results never change beyond the
 * float tolerance of a kernel's own arithmetic (pools, BatchNormalization,
 * elementwise ops and reorders give the same bytes in every layout).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/layout.h"
#include "daemon/compile/passes.h"
#include "daemon/profile.h"
#include "ops/layout.h"

/* A reorder's time: a fixed call cost plus its bytes read and written at
 * the rate gx_layout_reorder reaches on cache-resident tensors (measured:
 * 7 us for 128 KiB between NCHW and NHWC on one AVX-512 core; between
 * NHWC and NCHW16c, both channel-minor, 4-5 times faster). */
#define S_REORDER_US 0.3
#define S_REORDER_BYTES_PER_US 32000.0
#define S_REORDER_MINOR 0.25 /* the share of it between two channel-minor layouts */

/* A plan is stale when a new choice saves more than this share of the
 * graph's expected cost per job plus this many microseconds. */
#define S_STALE_GAIN 0.03
#define S_STALE_US 1.0

/* Is value v one the pass may lay out: static, 4-D, float32 (or 8-bit
 * integers: quantized activations, NHWC only), produced by a step or a
 * graph input (constants are rewritten per use instead)? */
static bool s_candidate(const gxd_plan *p, int v)
{
    const gxd_value *x = &p->values[v];
    if (x->kind != GXD_VALUE_TEMP && x->kind != GXD_VALUE_INPUT)
        return false;
    const gx_dtype t = x->view.dtype;
    return (t == GX_F32 || t == GX_U8 || t == GX_I8) && x->view.ndim == 4 && x->view.numel > 0 &&
           !x->keyed;
}

static double s_reorder_us(const gxd_plan *p, int v, size_t from, size_t to)
{
    const double t = S_REORDER_US + 2.0 * (double)p->values[v].nbytes / S_REORDER_BYTES_PER_US;
    return from != GX_LAYOUT_PLAIN && to != GX_LAYOUT_PLAIN ? t * S_REORDER_MINOR : t;
}

/* The inference context of step s on its (logical) views. */
static void s_infer_ctx(const gxd_plan *p, const gxd_step *s, gx_view *in, gx_view *out,
                        gx_infer *ic)
{
    for (int k = 0; k < s->n_in; k++)
        in[k] = s->in[k] < 0 ? (gx_view){.ndim = -1} : p->values[s->in[k]].view;
    for (int k = 0; k < s->n_out; k++)
        out[k] = p->values[s->out[k]].view;
    *ic = (gx_infer){.attr = s->attr, .n_in = s->n_in, .in = in, .n_out = s->n_out, .out = out};
}

/* The kernels per layout of step s's device (the fallback's: the pass
 * places only its steps), NULL when it has none. */
static const gx_backend_layouts *s_layouts(const gxd_plan *p, const gxd_step *s)
{
    return p->devices[s->device]->layouts;
}

static bool s_elementwise(const gxd_plan *p, const gxd_step *s)
{
    return (gx_op_schema_get(s->op)->flags & GX_OPF_ELEMENTWISE) &&
           p->devices[s->device]->kernel(s->op) && s->n_out == 1 && s->n_in == s->n_formal;
}

/* Does a 4-D x broadcast to y dim by dim (each dim 1 or y's)? Then it
 * does in every layout too: a layout permutes (and blocks) the dims of
 * both alike. */
static bool s_bcast4(const gx_view *x, const gx_view *y)
{
    if (x->ndim != 4 || y->ndim != 4)
        return false;
    for (int d = 0; d < 4; d++)
        if (x->shape[d] != 1 && x->shape[d] != y->shape[d])
            return false;
    return true;
}

/* Can step s run in layout l (not plain)? Its kernel, and its cost per run
 * relative to plain in *factor; or NULL with why. */
static gx_kernel_fn s_offer(const gxd_plan *p, const gxd_step *s, gx_layout l, double *factor,
                            char *why, size_t len)
{
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    gx_infer ic;
    const gxd_value *y = &p->values[s->out[0]];
    if (!gx_layout_fits(l, &y->view)) {
        snprintf(why, len, "%s: output '%s' does not fit", gx_layout_name(l), y->name);
        return NULL;
    }
    s_infer_ctx(p, s, in, out, &ic);
    if (!s_elementwise(p, s)) {
        gx_kernel_fn fn = s_layouts(p, s)->kernel(s->op, l, &ic, why, len);
        if (fn)
            *factor = s_layouts(p, s)->factor(s->op, l, &ic);
        return fn;
    }
    /* (De)QuantizeLinear's scale and zero point go along its axis, not
     * by broadcasting: per tensor only */
    if (s->op == GX_OP_QUANTIZE_LINEAR || s->op == GX_OP_DEQUANTIZE_LINEAR)
        for (int k = 1; k < s->n_in; k++)
            if (s->in[k] >= 0 && p->values[s->in[k]].view.numel != 1) {
                snprintf(why, len, "%s: %s per axis", gx_layout_name(l), gx_op_name(s->op));
                return NULL;
            }
    /* elementwise: data inputs of the output's shape or broadcasting to it
     * dim by dim (a squeeze-and-excite scale [N, C, 1, 1]) and stored in
     * l too, constants that broadcast in l once rewritten */
    for (int k = 0; k < s->n_in; k++) {
        const int v = s->in[k];
        if (v < 0)
            continue;
        const gxd_value *x = &p->values[v];
        if (x->kind == GXD_VALUE_CONST ? !gx_layout_operand(l, &x->view, y->view.shape, NULL)
                                       : !s_candidate(p, v) || !s_bcast4(&x->view, &y->view) ||
                                             !gx_layout_fits(l, &x->view)) {
            snprintf(why, len, "%s: input '%s' does not broadcast in it", gx_layout_name(l),
                     x->name);
            return NULL;
        }
    }
    *factor = 1.0;
    return p->devices[s->device]->kernel(s->op);
}

/* The layout step s (values still logical) reads its input k in when it
 * runs in layout l: l, or another where its kernel says so (a first Conv
 * reading its image in NCHW). */
static int s_reads(const gxd_plan *p, const gxd_step *s, int k, int l)
{
    if (l == GX_LAYOUT_PLAIN || s_elementwise(p, s) || !s_layouts(p, s))
        return l;
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    gx_infer ic;
    s_infer_ctx(p, s, in, out, &ic);
    return (int)s_layouts(p, s)->input(s->op, (gx_layout)l, &ic, k);
}

/* ---- building the problem ---- */

typedef struct s_build {
    gxd_plan *p;
    const gxd_compile_limits *lim;
    bool top;              /* a graph's plan (not a subgraph's): control flow is costed */
    const gx_view *inputs; /* the layouts graph inputs arrive in */
    int *op_of_step;       /* [n_steps]: op index or -1 (its inputs' op) */
    int *out_of_step;      /* [n_steps]: the op of its outputs (a control
                            * step's outputs are plain whatever its inputs) */
    int *src_of_value;     /* [n_values]: the op of a graph input, or -1 */
    bool *cand;            /* [n_values]: s_candidate, before any rewrite */
    int sink;              /* the op of the graph's outputs, or -1 */
    gxd_layout_rec *r;
    double *cost;          /* [n_ops][GX_LAYOUT_COUNT] for the solver */
    double *count;
    int *fixed;
    size_t cap_edges;
    int *edge_v;           /* the value index of each edge */
} s_build;

static int s_add_edge(s_build *b, int from, int to, int v)
{
    gxd_layout_rec *r = b->r;
    for (size_t e = 0; e < r->n_edges; e++) /* one edge per value and consumer */
        if (b->edge_v[e] == v && r->edges[e].to == to)
            return GX_OK;
    if (r->n_edges == b->cap_edges) {
        size_t cap = b->cap_edges ? 2 * b->cap_edges : 16;
        void *e1 = realloc(r->edges, cap * sizeof *r->edges);
        if (e1)
            r->edges = e1;
        void *e2 = realloc(b->edge_v, cap * sizeof *b->edge_v);
        if (e2)
            b->edge_v = e2;
        void *e3 = realloc(r->edge_value, cap * sizeof *r->edge_value);
        if (e3)
            r->edge_value = e3;
        if (!e1 || !e2 || !e3)
            return GX_ENOMEM;
        b->cap_edges = cap;
    }
    r->edges[r->n_edges] = (gxd_layout_edge){from, to};
    b->edge_v[r->n_edges] = v;
    r->edge_value[r->n_edges++] = b->p->values[v].name;
    return GX_OK;
}

/* Expected executions per job of node name (profile: runs / jobs). */
static double s_count(const gxd_profile *prof, const char *name)
{
    if (!prof || prof->jobs <= 0)
        return 1.0;
    const gxd_profile_node *n = gxd_profile_find(prof, name);
    return gxd_layout_expected(n && n->runs > 0 ? (unsigned long long)n->runs : 0,
                               (unsigned long long)prof->jobs);
}

/* The cost per run of layout-sensitive op in each layout (layout.h):
 * measured where the profile has its time in that layout, else scaled
 * from a time measured in another, else estimated. */
static void s_sensitive_costs(const gxd_layout_op *op, const gxd_profile *prof, double *cost)
{
    double meas[GX_LAYOUT_COUNT] = {0};
    int ref = -1;
    for (int l = 0; prof && l < GX_LAYOUT_COUNT; l++) {
        char name[GXD_PROFILE_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s@%s", op->node, gx_layout_name((gx_layout)l));
        const gxd_profile_node *e = isfinite(op->factor[l]) ? gxd_profile_find(prof, name) : NULL;
        if (e && e->ns > 0) {
            meas[l] = (double)e->ns / 1000.0;
            ref = ref < 0 ? l : ref;
        }
    }
    for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
        if (!isfinite(op->factor[l]))
            cost[l] = INFINITY;
        else if (meas[l] > 0)
            cost[l] = meas[l];
        else if (ref >= 0)
            cost[l] = meas[ref] * op->factor[l] / op->factor[ref];
        else
            cost[l] = op->est * op->factor[l];
    }
}

/* runs(subgraph g of node) / runs(node) from the profile, 1 without. */
static double s_ratio(const gxd_profile *prof, const char *node, const char *attr,
                      const gx_graph *g)
{
    const gxd_profile_node *n = prof && prof->jobs > 0 ? gxd_profile_find(prof, node) : NULL;
    if (!n || n->runs <= 0)
        return 1.0;
    int64_t runs = 0;
    char path[GXD_PROFILE_MAX_NAME];
    for (size_t k = 0; k < g->n_nodes; k++) {
        snprintf(path, sizeof path, "%s/%s/%s", node, attr, g->nodes[k]->name);
        const gxd_profile_node *q = gxd_profile_find(prof, path);
        if (q && q->runs > runs)
            runs = q->runs;
    }
    return (double)runs / (double)n->runs;
}

/* Cost per run of control step s (an If or a Loop of a graph's plan) in
 * each layout of the 4-D values its subgraphs capture: each subgraph is
 * compiled (and cached on the step) with those values in that layout. The
 * step stays fixed plain when a 4-D value is among its own inputs, or a
 * subgraph does not compile. */
static void s_control(s_build *b, const gxd_step *s, gxd_layout_op *op, const gxd_profile *prof)
{
    const gxd_plan *p = b->p;
    bool captures = false;
    for (int k = 0; k < s->n_in; k++) {
        const int v = s->in[k];
        if (v >= 0 && b->cand[v] && k < s->n_formal)
            return;
        captures = captures || (v >= 0 && b->cand[v]);
    }
    if (!captures || !s->sub || (s->op != GX_OP_IF && s->op != GX_OP_LOOP))
        return;
    gx_view in[GX_MAX_OP_INPUTS + 2];
    bool konst[GX_MAX_OP_INPUTS + 2];
    size_t n_formal = 0;
    if (s->op == GX_OP_LOOP) { /* the body's iteration number, condition, carried values */
        in[n_formal++] = (gx_view){.dtype = GX_I64, .ndim = 0, .numel = 1};
        in[n_formal++] = (gx_view){.dtype = GX_BOOL, .ndim = 0, .numel = 1};
        for (int k = 2; k < s->n_formal; k++) {
            const gx_view *v = &p->values[s->in[k]].view;
            if (v->ndim < 0)
                return;
            in[n_formal++] = *v;
        }
    }
    static const char *const attrs[2][2] = {{"then_branch", "else_branch"}, {"body", NULL}};
    const char *const *names = attrs[s->op == GX_OP_LOOP];
    for (int a = 0; a < 2 && names[a]; a++) {
        const int *pos;
        size_t n_cap;
        const gx_graph *g = gxd_subplans_graph(s->sub, names[a], &pos, &n_cap);
        if (!g || n_formal + n_cap > GX_MAX_OP_INPUTS)
            goto fixed;
        op->sub_attr[op->n_sub] = names[a];
        op->sub[op->n_sub] = g;
        op->ratio[op->n_sub] = s_ratio(prof, s->node->name, names[a], g);
        for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
            double *c = &op->sub_cost[op->n_sub][l];
            *c = INFINITY;
            for (size_t i = 0; i < n_cap; i++) {
                const int v = s->in[pos[i]];
                in[n_formal + i] = p->values[v].view;
                if (b->cand[v] && l != GX_LAYOUT_PLAIN) {
                    if (!gx_layout_fits((gx_layout)l, &in[n_formal + i]))
                        goto next;
                    in[n_formal + i] = gx_layout_physical((gx_layout)l, &in[n_formal + i]);
                }
            }
            gxd_plan *sp = NULL;
            bool owned = false;
            char err[256];
            gxd_subplans_consts(p, s, pos, n_cap, konst);
            for (size_t i = 0; i < n_cap; i++) /* a constant passed in another layout is not it */
                konst[i] = konst[i] && in[n_formal + i].layout == GX_LAYOUT_PLAIN;
            if (gxd_subplans_get(s->sub, g, in, konst, b->lim, &sp, &owned, err, sizeof err) <
                0) {
                if (l == GX_LAYOUT_PLAIN)
                    goto fixed;
                goto next;
            }
            *c = sp->layout ? sp->layout->total : 0;
            if (owned)
                gxd_plan_destroy(&sp);
        next:;
        }
        op->n_sub++;
    }
    for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
        op->cost[l] = 0;
        for (int k = 0; k < op->n_sub; k++)
            op->cost[l] += op->ratio[k] * op->sub_cost[k][l];
        op->free = op->free || (l != GX_LAYOUT_PLAIN && isfinite(op->cost[l]));
    }
    if (!op->free)
        snprintf(op->why, sizeof op->why, "no subgraph compiles with its values in another layout");
    return;
fixed: /* plain, as any step that is not costed */
    op->n_sub = 0;
}

/* One op per step that touches a candidate value, with its costs. */
static int s_ops(s_build *b, const gxd_profile *prof)
{
    gxd_plan *p = b->p;
    gxd_layout_rec *r = b->r;
    size_t n = 0;
    bool any_free = false;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        bool touches = false;
        for (int k = 0; k < s->n_in && !s->folded; k++)
            touches = touches || (s->in[k] >= 0 && b->cand[s->in[k]]);
        for (int k = 0; k < s->n_out && !s->folded; k++)
            touches = touches || b->cand[s->out[k]];
        b->op_of_step[i] = b->out_of_step[i] = touches ? (int)n++ : -1;
        if (touches && (gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL))
            b->out_of_step[i] = (int)n++;
    }
    for (size_t v = 0; v < p->n_values; v++)
        b->src_of_value[v] = -1;
    for (size_t i = 0; i < p->n_inputs; i++)
        if (b->cand[p->inputs[i]])
            b->src_of_value[p->inputs[i]] = (int)n++;
    bool out_cand = false;
    for (size_t i = 0; i < p->n_outputs; i++)
        out_cand = out_cand || b->cand[p->outputs[i]];
    b->sink = out_cand ? (int)n++ : -1;
    if (!(r->ops = calloc(n + 1, sizeof *r->ops)))
        return GX_ENOMEM;
    r->n_ops = n;
    for (size_t i = 0; i < p->n_steps; i++) {
        const int o = b->op_of_step[i];
        if (o < 0)
            continue;
        const gxd_step *s = &p->steps[i];
        gxd_layout_op *op = &r->ops[o];
        *op = (gxd_layout_op){.node = s->node->name, .op = s->op, .fixed = GX_LAYOUT_PLAIN,
                              .count = s_count(prof, s->node->name)};
        const double base = gxd_est_us(&s->cost);
        op->cost[GX_LAYOUT_PLAIN] = op->est = base;
        op->factor[GX_LAYOUT_PLAIN] = 1.0;
        if (b->out_of_step[i] != o) { /* control flow: its outputs are plain */
            r->ops[b->out_of_step[i]] = (gxd_layout_op){.node = s->node->name, .op = s->op,
                                                         .fixed = GX_LAYOUT_PLAIN, .count = op->count};
            if (b->top)
                s_control(b, s, op, prof);
            if (op->free) {
                op->fixed = -1;
                any_free = true;
            }
            continue;
        }
        const bool may = !s->dynamic && !s->copy && s->device == 0 && s_layouts(p, s) &&
                         s->n_out >= 1 && b->cand[s->out[0]];
        size_t at = 0;
        for (int l = 1; l < GX_LAYOUT_COUNT; l++) {
            double factor = 1;
            char why[128] = "";
            op->cost[l] = op->factor[l] = INFINITY;
            if (may && s_offer(p, s, (gx_layout)l, &factor, why, sizeof why)) {
                op->cost[l] = base * factor;
                op->factor[l] = factor;
                op->free = true;
            } else if (may && at < sizeof op->why) {
                at += (size_t)snprintf(op->why + at, sizeof op->why - at, "%s%s", at ? "; " : "",
                                       why);
            }
        }
        if (op->free) {
            op->fixed = -1;
            any_free = true;
            if (gx_layout_sensitive(s->op))
                s_sensitive_costs(op, b->r->estimates_only ? NULL : prof, op->cost);
        } else {
            op->why[0] = '\0';
        }
    }
    /* graph inputs keep the layout they arrive in */
    for (size_t i = 0; i < p->n_inputs; i++) {
        const int o = b->src_of_value[p->inputs[i]];
        if (o < 0)
            continue;
        const gx_layout l = b->inputs ? b->inputs[i].layout : GX_LAYOUT_PLAIN;
        r->ops[o] = (gxd_layout_op){.node = p->values[p->inputs[i]].name, .op = GX_OP_COUNT,
                                    .fixed = (int)l, .count = 1};
        any_free = any_free || l != GX_LAYOUT_PLAIN;
    }
    if (b->sink >= 0)
        r->ops[b->sink] = (gxd_layout_op){.node = "(outputs)", .op = GX_OP_COUNT,
                                          .fixed = GX_LAYOUT_PLAIN, .count = 1};
    return any_free ? 1 : 0;
}

/* The op that produces value v (a step's, or the inputs'). */
static int s_producer_op(const s_build *b, int v)
{
    const gxd_value *x = &b->p->values[v];
    return x->def >= 0 ? b->out_of_step[x->def] : b->src_of_value[v];
}

static int s_edges(s_build *b)
{
    gxd_plan *p = b->p;
    int rc = GX_OK;
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++) {
        const gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in && b->op_of_step[i] >= 0 && rc == GX_OK; k++)
            if (s->in[k] >= 0 && b->cand[s->in[k]])
                rc = s_add_edge(b, s_producer_op(b, s->in[k]), b->op_of_step[i], s->in[k]);
    }
    for (size_t o = 0; o < p->n_outputs && rc == GX_OK; o++)
        if (b->cand[p->outputs[o]])
            rc = s_add_edge(b, s_producer_op(b, p->outputs[o]), b->sink, p->outputs[o]);
    const size_t L = GX_LAYOUT_COUNT, ne = b->r->n_edges;
    if (rc == GX_OK && !(b->r->reorder = calloc(ne * L * L + 1, sizeof *b->r->reorder)))
        rc = GX_ENOMEM;
    for (size_t e = 0; e < ne && rc == GX_OK; e++)
        for (size_t a = 0; a < L; a++)
            for (size_t c = 0; c < L; c++)
                b->r->reorder[(e * L + a) * L + c] = a == c ? 0 : s_reorder_us(p, b->edge_v[e], a, c);
    /* a consumer in layout c that reads the value in another (s_reads):
     * the reorder goes there, and none only from that layout. An
     * elementwise op that is the only reader of a Conv's or another
     * elementwise op's value joins it in one step in the same layout (the
     * fuse pass; a Conv's epilogue): a reorder between them also makes
     * that op a pass over memory of its own, about another reorder's time. */
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++) {
        const gxd_step *s = &p->steps[i];
        const int o = b->op_of_step[i];
        for (int k = 0; k < s->n_in && o >= 0; k++) {
            const int v = s->in[k];
            for (size_t c = 0; c < L && v >= 0 && b->cand[v]; c++) {
                const int want = s_reads(p, s, k, (int)c);
                for (size_t e = 0; e < ne && want != (int)c; e++)
                    if (b->edge_v[e] == v && b->r->edges[e].to == o)
                        for (size_t a = 0; a < L; a++)
                            b->r->reorder[(e * L + a) * L + c] =
                                a == (size_t)want ? 0 : s_reorder_us(p, v, a, (size_t)want);
            }
            const int d = v >= 0 && b->cand[v] ? p->values[v].def : -1;
            if (d < 0 || !s_elementwise(p, s) ||
                (p->steps[d].op != GX_OP_CONV && !s_elementwise(p, &p->steps[d])))
                continue;
            size_t at = ne, readers = 0;
            for (size_t e = 0; e < ne; e++)
                if (b->edge_v[e] == v)
                    readers++, at = b->r->edges[e].to == o ? e : at;
            for (size_t a = 0; a < L && readers == 1 && at < ne; a++)
                for (size_t c = 0; c < L; c++)
                    b->r->reorder[(at * L + a) * L + c] +=
                        a == c ? 0 : s_reorder_us(p, v, GX_LAYOUT_PLAIN, GX_LAYOUT_NHWC);
        }
    }
    return rc;
}

static gxd_layout_problem s_problem(const s_build *b)
{
    return (gxd_layout_problem){.n_ops = (int)b->r->n_ops, .n_layouts = GX_LAYOUT_COUNT,
                                .cost = b->cost, .count = b->count,
                                .n_edges = (int)b->r->n_edges, .edge = b->r->edges,
                                .reorder = b->r->reorder, .fixed = b->fixed};
}

/* ---- rewriting the plan ---- */

/* A new value of the plan: a copy of value v named "<v>@<suffix>". */
static int s_new_value(gxd_plan *p, int v, const char *suffix, int *out)
{
    const gxd_value *src = &p->values[v];
    size_t len = strlen(src->name) + strlen(suffix) + 2;
    char *name = gxd_plan_own(p, len);
    if (!name)
        return GX_ENOMEM;
    snprintf(name, len, "%s@%s", src->name, suffix);
    gxd_value *c = &p->values[p->n_values];
    *c = *src;
    c->name = name;
    c->keyed = false;
    c->buffer = -1;
    c->offset = 0;
    *out = (int)p->n_values++;
    return GX_OK;
}

/* A new constant named after value v, of dtype and shape `shape` (its
 * data ignored), with zeroed memory the plan owns for the caller to fill. */
static int s_new_const(gxd_plan *p, int v, const char *suffix, gx_view shape, int *out)
{
    int rc = s_new_value(p, v, suffix, out);
    if (rc < 0)
        return rc;
    gxd_value *c = &p->values[*out];
    shape.numel = 1;
    for (int d = 0; d < shape.ndim; d++)
        shape.numel *= shape.shape[d];
    c->view = shape;
    c->kind = GXD_VALUE_CONST;
    c->def = -1;
    c->nbytes = (size_t)shape.numel * gx_dtype_size(shape.dtype);
    if (!(c->view.data = gxd_plan_own(p, c->nbytes)))
        return GX_ENOMEM;
    return GX_OK;
}

/* Rewrites step s (an op the choice put in layout l, not plain) while
 * the values are still logical: its kernel for l, a Conv's weights packed
 * and its scratch, an elementwise op's constant operands rewritten. */
static int s_rewrite_step(gxd_plan *p, gxd_step *s, gx_layout l, size_t *n_packed)
{
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    gx_infer ic;
    char why[128];
    double factor;
    s->kernel = s_offer(p, s, l, &factor, why, sizeof why);
    s_infer_ctx(p, s, in, out, &ic);
    s->layout = l;
    int rc = GX_OK;
    if (s->op == GX_OP_CONV && !s_elementwise(p, s)) {
        /* its weights are packed for l by the prepare pass */
        s->scratch_bytes = s_layouts(p, s)->conv_scratch(l, &ic);
    } else if (s_elementwise(p, s)) {
        const int64_t *nchw = p->values[s->out[0]].view.shape;
        for (int k = 0; k < s->n_in && rc == GX_OK; k++) {
            const int v = s->in[k];
            gx_view shape;
            int c;
            if (v < 0 || p->values[v].kind != GXD_VALUE_CONST || p->values[v].view.numel == 1)
                continue;
            gx_layout_operand(l, &p->values[v].view, nchw, &shape);
            if ((rc = s_new_const(p, v, gx_layout_name(l), shape, &c)) == GX_OK) {
                gx_layout_operand_fill(l, &p->values[v].view, nchw, &p->values[c].view);
                s->in[k] = c;
                (*n_packed)++;
            }
        }
    }
    return rc;
}

/* The reorder step making value c (layout of its view) from value v. */
static int s_reorder_step(gxd_plan *p, int v, int c, gxd_step *s)
{
    int rc = gxd_step_move(p, "reorder", v, c, s);
    s->kernel = p->devices[0]->layouts->reorder; /* the pass places the fallback's steps */
    s->layout = p->values[c].view.layout;
    s->reorder = true;
    return rc;
}

/* Appends after steps[*m) the reorder steps that value v (old index) needs:
 * reord[v][l] == 0 marks one, which then gets its value's index. */
static int s_emit_reorders(s_build *b, int v, int *reord, gxd_step *steps, size_t *m)
{
    gxd_plan *p = b->p;
    int rc = GX_OK;
    for (int l = 0; l < GX_LAYOUT_COUNT && rc == GX_OK; l++) {
        int *c = &reord[(size_t)v * GX_LAYOUT_COUNT + (size_t)l];
        if (*c != 0)
            continue;
        const gx_view logical = gx_layout_logical(&p->values[v].view);
        if ((rc = s_new_value(p, v, gx_layout_name((gx_layout)l), c)) < 0)
            break;
        gxd_value *x = &p->values[*c];
        x->kind = GXD_VALUE_TEMP;
        x->view = gx_layout_physical((gx_layout)l, &logical);
        x->view.data = NULL;
        x->def = (int)*m;
        if ((rc = s_reorder_step(p, v, *c, &steps[*m])) == GX_OK) {
            (*m)++;
            b->r->n_reorders++;
        } else { /* not among the steps the plan frees */
            free(steps[*m].in), free(steps[*m].out);
        }
    }
    return rc;
}

/* Applies the choice: step rewrites (on logical views), value layouts,
 * then the new step list with the reorders. */
static int s_apply(s_build *b, const int *choice)
{
    gxd_plan *p = b->p;
    const size_t nv = p->n_values, ns = p->n_steps, L = GX_LAYOUT_COUNT;
    int *lay = malloc((nv + 1) * sizeof *lay);         /* layout of each value */
    int *reord = malloc((nv * L + 1) * sizeof *reord); /* [v][l]: its copy in l, or -1 */
    int *renum = malloc((ns + 1) * sizeof *renum);
    size_t *at = malloc((ns + 1) * sizeof *at); /* step i's reads start at want[at[i]] */
    int *want = NULL;                           /* [step][k]: s_reads */
    int rc = GX_ENOMEM;
    size_t n_new = 0, n_extra = 0;
    if (!lay || !reord || !renum || !at)
        goto out;
    at[0] = 0;
    for (size_t i = 0; i < ns; i++)
        at[i + 1] = at[i] + (size_t)p->steps[i].n_in;
    if (!(want = malloc((at[ns] + 1) * sizeof *want)))
        goto out;
    for (size_t v = 0; v < nv; v++) {
        const int o = b->cand[(int)v] ? s_producer_op(b, (int)v) : -1;
        lay[v] = o >= 0 ? choice[o] : GX_LAYOUT_PLAIN;
    }
    for (size_t i = 0; i < nv * L; i++)
        reord[i] = -1;
    /* what is needed: reorders per (value, layout), new constants per step */
    for (size_t i = 0; i < ns; i++) {
        const gxd_step *s = &p->steps[i];
        const int o = b->op_of_step[i];
        int *w = &want[at[i]];
        for (int k = 0; o >= 0 && k < s->n_in; k++) {
            const int v = s->in[k];
            w[k] = s_reads(p, s, k, choice[o]);
            if (v >= 0 && b->cand[v] && lay[v] != w[k] && reord[(size_t)v * L + (size_t)w[k]] < 0) {
                reord[(size_t)v * L + (size_t)w[k]] = 0;
                n_new++;
            }
        }
        if (o >= 0 && choice[o] != GX_LAYOUT_PLAIN)
            n_extra += (size_t)s->n_in;
    }
    for (size_t k = 0; k < p->n_outputs; k++) {
        const int v = p->outputs[k];
        if (lay[v] != GX_LAYOUT_PLAIN && reord[(size_t)v * L] < 0) {
            reord[(size_t)v * L] = 0;
            n_new++;
        }
    }
    gxd_value *vals = realloc(p->values, (nv + n_new + n_extra + 1) * sizeof *vals);
    if (!vals)
        goto out;
    p->values = vals;
    gxd_step *steps = calloc(ns + n_new + 1, sizeof *steps);
    if (!steps)
        goto out;
    rc = GX_OK;
    for (size_t i = 0; i < ns && rc == GX_OK; i++) {
        const int o = b->op_of_step[i];
        if (o < 0 || choice[o] == GX_LAYOUT_PLAIN)
            continue;
        if (b->out_of_step[i] == o)
            rc = s_rewrite_step(p, &p->steps[i], (gx_layout)choice[o], &b->r->n_packed);
        else /* control flow: its captured values arrive in the layout */
            p->steps[i].layout = (gx_layout)choice[o];
    }
    for (size_t v = 0; v < nv; v++)
        if (lay[v] != GX_LAYOUT_PLAIN && p->values[v].view.layout == GX_LAYOUT_PLAIN)
            p->values[v].view = gx_layout_physical((gx_layout)lay[v], &p->values[v].view);
    /* the reorders of graph inputs first, then each step followed by the
     * reorders of its outputs */
    size_t m = 0;
    for (size_t i = 0; i < p->n_inputs && rc == GX_OK; i++)
        rc = s_emit_reorders(b, p->inputs[i], reord, steps, &m);
    for (size_t i = 0; i < ns && rc == GX_OK; i++) {
        gxd_step *s = &p->steps[i];
        renum[i] = (int)m;
        steps[m++] = *s;
        memset(s, 0, sizeof *s);
        const gxd_step *t = &steps[renum[i]];
        for (int k = 0; k < t->n_out && rc == GX_OK; k++)
            rc = s_emit_reorders(b, t->out[k], reord, steps, &m);
    }
    /* the old array holds only moved-out (zeroed) steps now, but for
     * those not reached on failure */
    for (size_t i = 0; i < ns; i++) {
        free(p->steps[i].in), free(p->steps[i].out), free(p->steps[i].succ);
        gxd_subplans_destroy(&p->steps[i].sub);
        free(p->steps[i].fused);
    }
    free(p->steps);
    p->steps = steps;
    p->n_steps = m;
    if (rc < 0)
        goto out;
    /* readers of a value in another layout read its copy */
    for (size_t i = 0; i < ns; i++) {
        gxd_step *s = &steps[renum[i]];
        const int o = b->op_of_step[i];
        const int *w = &want[at[i]];
        for (int k = 0; o >= 0 && k < s->n_in; k++) {
            const int v = s->in[k];
            if (v >= 0 && (size_t)v < nv && b->cand[v] && lay[v] != w[k])
                s->in[k] = reord[(size_t)v * L + (size_t)w[k]];
        }
    }
    for (size_t v = 0; v < nv; v++) /* the new values have their final def already */
        if (p->values[v].def >= 0)
            p->values[v].def = renum[p->values[v].def];
    for (size_t k = 0; k < p->n_outputs; k++)
        if (lay[p->outputs[k]] != GX_LAYOUT_PLAIN)
            p->outputs[k] = reord[(size_t)p->outputs[k] * L];
    for (size_t f = 0; f < p->n_fell; f++)
        p->fell[f].step = renum[p->fell[f].step];
    for (size_t k = 0; k < p->n_parts; k++) {
        if (p->parts[k].entry >= 0)
            p->parts[k].entry = renum[p->parts[k].entry];
        if (p->parts[k].exit >= 0)
            p->parts[k].exit = renum[p->parts[k].exit];
    }
out:
    free(lay), free(reord), free(renum), free(at), free(want);
    return rc;
}

void gxd_layout_rec_destroy(gxd_layout_rec **rp)
{
    gxd_layout_rec *r = *rp;
    if (!r)
        return;
    free(r->ops), free(r->edges), free(r->edge_value), free(r->reorder);
    free(r);
    *rp = NULL;
}

static void s_build_free(s_build *b)
{
    free(b->op_of_step), free(b->out_of_step), free(b->src_of_value), free(b->cand), free(b->cost), free(b->count), free(b->fixed), free(b->edge_v);
}

/* The solver's arrays from the records r: with prof, the expected
 * executions (and control flow's ratios) it gives, else those recorded. */
static void s_arrays(const gxd_layout_rec *r, const gxd_profile *prof, double *cost,
                     double *count, int *fixed)
{
    for (size_t o = 0; o < r->n_ops; o++) {
        const gxd_layout_op *op = &r->ops[o];
        count[o] = prof && op->op != GX_OP_COUNT ? s_count(prof, op->node) : op->count;
        fixed[o] = op->fixed;
        double c[GX_LAYOUT_COUNT];
        memcpy(c, op->cost, sizeof c);
        if (prof && op->free && gx_layout_sensitive(op->op) && !r->estimates_only)
            s_sensitive_costs(op, prof, c);
        for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
            if (prof && op->n_sub) {
                c[l] = 0;
                for (int k = 0; k < op->n_sub; k++)
                    c[l] += s_ratio(prof, op->node, op->sub_attr[k], op->sub[k]) *
                            op->sub_cost[k][l];
            }
            cost[o * GX_LAYOUT_COUNT + (size_t)l] = op->free || l == 0 ? c[l] : 0;
        }
    }
}

/* Builds the problem of plan p into b (b->r set). 1: there is something
 * to choose (or inputs arrive in another layout than plain); 0: every
 * value stays plain; < 0: ENOMEM. */
static int s_build_problem(s_build *b, const gxd_profile *prof)
{
    if (!(b->op_of_step = malloc((b->p->n_steps + 1) * sizeof *b->op_of_step)) ||
        !(b->out_of_step = malloc((b->p->n_steps + 1) * sizeof *b->out_of_step)) ||
        !(b->src_of_value = malloc((b->p->n_values + 1) * sizeof *b->src_of_value)) ||
        !(b->cand = malloc((b->p->n_values + 1) * sizeof *b->cand)))
        return GX_ENOMEM;
    for (size_t v = 0; v < b->p->n_values; v++)
        b->cand[v] = s_candidate(b->p, (int)v);
    int rc = s_ops(b, prof);
    if (rc < 0)
        return rc;
    const size_t n = b->r->n_ops;
    if (!(b->cost = calloc((n + 1) * GX_LAYOUT_COUNT, sizeof *b->cost)) ||
        !(b->count = calloc(n + 1, sizeof *b->count)) ||
        !(b->fixed = calloc(n + 1, sizeof *b->fixed)))
        return GX_ENOMEM;
    s_arrays(b->r, NULL, b->cost, b->count, b->fixed);
    int e = s_edges(b);
    return e < 0 ? e : rc;
}

int gxd_pass_layout(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    gxd_layout_rec *r = calloc(1, sizeof *r);
    if (!(p->layout = r))
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    r->estimates_only = st->lim->no_layout_times;
    if (st->lim->no_layout) {
        snprintf(r->why, sizeof r->why, "compiler.layout is off");
        return GX_OK;
    }
    s_build b = {.p = p, .lim = st->lim, .top = !st->captured, .inputs = st->inputs, .r = r};
    int *choice = NULL, rc = s_build_problem(&b, b.top ? st->lim->profile : NULL);
    if (rc < 0)
        goto out;
    if (!r->n_ops) {
        snprintf(r->why, sizeof r->why, "no 4-D float32 values");
        goto out;
    }
    const int any_free = rc;
    gxd_layout_problem pb = s_problem(&b);
    gxd_layout_result res;
    if (!(choice = calloc(r->n_ops + 1, sizeof *choice))) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t o = 0; o < r->n_ops; o++)
        choice[o] = b.fixed[o] >= 0 ? b.fixed[o] : GX_LAYOUT_PLAIN;
    r->plain_total = gxd_layout_cost(&pb, choice);
    if ((rc = gxd_layout_solve(&pb, choice, &res)) < 0)
        goto out;
    for (size_t o = 0; o < r->n_ops; o++)
        r->ops[o].chosen = choice[o];
    r->total = res.total;
    r->exact = res.exact;
    if (!any_free) { /* the totals are still what a caller costing this plan needs */
        snprintf(r->why, sizeof r->why, "no op has a kernel for another layout");
        goto out;
    }
    rc = s_apply(&b, choice);
    p->layout_open = rc >= 0 && b.top;
out:
    free(choice);
    s_build_free(&b);
    return rc < 0 ? gx_errf(st->err, st->errlen, rc, "layout: %s",
                            rc == GX_ENOMEM ? "out of memory" : "no feasible assignment")
                  : GX_OK;
}

bool gxd_plan_layout_stale(const gxd_plan *p, const struct gxd_profile *prof, char *why,
                           size_t len)
{
    if (len)
        why[0] = '\0';
    const gxd_layout_rec *r = p->layout;
    if (!r && p->from_artifact && p->layout_open && prof) {
        /* the file keeps the choices, not the problem: only a compile
         * from the graph with the profile can say (and its plan replaces
         * this one, and the file, atomically) */
        snprintf(why, len, "read from an artifact, which keeps no layout problem: compiled "
                           "from the graph with the profile");
        return true;
    }
    if (!r || !r->n_ops || r->why[0] || !prof)
        return false; /* nothing was free to choose */
    const size_t n = r->n_ops, L = GX_LAYOUT_COUNT;
    double *cost = calloc(n * L + 1, sizeof *cost), *count = calloc(n + 1, sizeof *count);
    int *fixed = calloc(n + 1, sizeof *fixed), *choice = calloc(n + 1, sizeof *choice);
    int *old_choice = calloc(n + 1, sizeof *old_choice);
    bool stale = false;
    if (!cost || !count || !fixed || !choice || !old_choice)
        goto out;
    s_arrays(r, prof, cost, count, fixed);
    gxd_layout_problem pb = {.n_ops = (int)n, .n_layouts = (int)L, .cost = cost, .count = count,
                             .n_edges = (int)r->n_edges, .edge = r->edges,
                             .reorder = r->reorder, .fixed = fixed};
    gxd_layout_result res;
    if (gxd_layout_solve(&pb, choice, &res) < 0)
        goto out;
    /* only a choice that pays: measured times jitter, and a near-tie must
     * not re-plan back and forth */
    for (size_t o = 0; o < n; o++)
        old_choice[o] = r->ops[o].chosen;
    const double now = gxd_layout_cost(&pb, old_choice);
    if (!(now - res.total > S_STALE_GAIN * res.total + S_STALE_US))
        goto out;
    /* the op whose move changes its own cost the most, to say why */
    size_t at = n;
    double most = -1;
    for (size_t o = 0; o < n; o++) {
        const double d =
            fabs(cost[o * L + (size_t)choice[o]] - cost[o * L + (size_t)old_choice[o]]) * count[o];
        if (choice[o] != old_choice[o] && d > most)
            most = d, at = o;
    }
    if (at == n) /* a cheaper total moves some op; never here */
        goto out;
    stale = true;
    if (len)
        snprintf(why, len,
                 "'%s': %s (%.3g us per job) over %s (%.3g us per job); the graph: %.4g us per "
                 "job instead of %.4g",
                 r->ops[at].node, gx_layout_name((gx_layout)choice[at]),
                 cost[at * L + (size_t)choice[at]] * count[at],
                 gx_layout_name((gx_layout)old_choice[at]),
                 cost[at * L + (size_t)old_choice[at]] * count[at], res.total, now);
out:
    free(cost), free(count), free(fixed), free(choice), free(old_choice);
    return stale;
}
