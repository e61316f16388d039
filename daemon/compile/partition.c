/*
 * Pass 4, partition (seed 000). Contract: after infer, before layout and fuse.
 * Every step gets a device (an index into plan->devices: the fallback, the
 * CPU, is 0; the other backends offered follow in order of preference) and
 * every step that runs a partition. For each preferred device in turn:
 *
 *   pass one  the steps no device has taken yet whose op the device's table
 *             lists form maximal connected subgraphs (data edges between
 *             two such steps);
 *   pass two  each subgraph's steps are checked against the device's rules
 *             with their inferred dtypes, shapes and attributes; the failing
 *             ones are removed, and what remains is pruned until every
 *             subgraph has a single entry step (the only one reading a value
 *             from outside it) and a single exit step (the only one whose
 *             outputs are read outside it or are graph outputs):
 *               several entries: from the first entry, walk forward inside
 *                 the subgraph, stopping at the other entries; what was
 *                 reached is one subgraph, the rest others; iterate;
 *               one entry, several exits: from the last exit, walk
 *                 backward, stopping at the other exits; likewise;
 *             a subgraph with fewer steps than opts->min_nodes is dropped,
 *             and so is one whose estimated time on the device (its
 *             table's costs: launches, the copies in and out, its rates)
 *             is not below its estimated time on the CPU, unless
 *             opts->no_cost_check (partition.cost_check false).
 *
 * Steps dropped (or never taken) stay free for the next device and end on
 * the fallback; each drop is recorded in plan->fell with its reason. A
 * device half step (step.dev_half: a 16-bit float step the CPU has no
 * kernel for, kept at that dtype for a device) that no device took ends
 * the pass with st->half_left: the compile starts again with such steps
 * widened (float32 on the CPU, or on a device that takes float32).
 * Dynamic and control-flow steps always run on the fallback (rules cannot
 * be checked without shapes; the executor runs control flow), and so do
 * steps that read or write string tensors (a string's bytes live in host
 * memory: docs/strings.md). Folded steps
 * run nowhere (device 0, part -1). A copy step (op Identity, step.copy) is
 * inserted on every edge whose ends are on different devices: graph
 * inputs and outputs live on the fallback; constants are loaded with the
 * plan on every device that reads them and are not copied. With the CPU
 * alone (the default) the steps, values and outputs are left exactly as
 * they were; only device, part and the partition records are set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

/* Working state of one run of the pass. */
typedef struct s_part {
    gxd_cstate *st;
    gxd_plan *p;
    const gxd_partition_opts *opts;
    size_t n;       /* steps */
    int *dev;       /* device per step; -1: not taken yet */
    int *part;      /* partition per step, -1: none */
    int *pred_off;  /* CSR of producer steps (non-folded) per step */
    int *pred;
    int *succ_off;  /* CSR of consumer steps per step */
    int *succ;
    char (*note)[96]; /* why a step was pruned from its subgraph, if it was */
    int *mark;      /* scratch: membership stamp per step */
    int *queue;     /* scratch */
    bool *stop;     /* scratch, all false between uses */
    int stamp;
} s_part;

static gxd_partition_opts s_defaults(void)
{
    gxd_partition_opts o = {.n_backends = 1, .min_nodes = GXD_PARTITION_MIN_NODES};
    o.backends[0] = gx_backend_cpu();
    return o;
}

/* The step that produces value v and runs (not folded), else -1. */
static int s_producer(const gxd_plan *p, int v)
{
    if (v < 0)
        return -1;
    int d = p->values[v].def;
    return d >= 0 && !p->steps[d].folded ? d : -1;
}

/* Producer and consumer lists, over running steps only. */
static int s_edges(s_part *w)
{
    const gxd_plan *p = w->p;
    size_t n_e = 0;
    for (size_t i = 0; i < w->n; i++)
        n_e += (size_t)p->steps[i].n_in;
    if (!(w->pred_off = calloc(w->n + 1, sizeof *w->pred_off)) ||
        !(w->succ_off = calloc(w->n + 2, sizeof *w->succ_off)) ||
        !(w->pred = calloc(n_e + 1, sizeof *w->pred)) ||
        !(w->succ = calloc(n_e + 1, sizeof *w->succ)))
        return GX_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        w->pred_off[i] = (int)k;
        if (p->steps[i].folded)
            continue;
        for (int j = 0; j < p->steps[i].n_in; j++) {
            int d = s_producer(p, p->steps[i].in[j]);
            if (d >= 0) {
                w->pred[k++] = d;
                w->succ_off[d + 2]++;
            }
        }
    }
    w->pred_off[w->n] = (int)k;
    for (size_t i = 0; i < w->n; i++)
        w->succ_off[i + 2] += w->succ_off[i + 1];
    for (size_t i = 0; i < w->n; i++)
        for (int e = w->pred_off[i]; e < w->pred_off[i + 1]; e++)
            w->succ[w->succ_off[w->pred[e] + 1]++] = (int)i;
    return GX_OK;
}

static int s_fall(s_part *w, int step, int device, const char *why)
{
    gxd_plan *p = w->p;
    if (!gx_grow(&p->fell, &p->cap_fell, p->n_fell + 1, sizeof *p->fell))
        return GX_ENOMEM;
    gxd_fallout *f = &p->fell[p->n_fell++];
    f->step = step;
    f->device = device;
    snprintf(f->why, sizeof f->why, "%s", why);
    return GX_OK;
}

static const char *s_name(const gxd_step *s)
{
    return s->node && s->node->name && s->node->name[0] ? s->node->name : "?";
}

/* Does step i read a value from outside set `in` (stamp w->stamp)?
 * Constants and folded values do not count: every device has them. */
static bool s_is_entry(const s_part *w, int i)
{
    const gxd_step *s = &w->p->steps[i];
    for (int k = 0; k < s->n_in; k++) {
        int v = s->in[k];
        if (v < 0)
            continue;
        int d = s_producer(w->p, v);
        if (d >= 0 ? w->mark[d] != w->stamp : w->p->values[v].kind == GXD_VALUE_INPUT)
            return true;
    }
    return false;
}

static bool s_is_exit(const s_part *w, int i)
{
    for (int e = w->succ_off[i]; e < w->succ_off[i + 1]; e++)
        if (w->mark[w->succ[e]] != w->stamp)
            return true;
    const gxd_step *s = &w->p->steps[i];
    for (int k = 0; k < s->n_out; k++)
        for (size_t o = 0; o < w->p->n_outputs; o++)
            if (w->p->outputs[o] == s->out[k])
                return true;
    return false;
}

/* Marks the steps of set[0..n) with a fresh stamp. */
static void s_stamp(s_part *w, const int *set, int n)
{
    w->stamp++;
    for (int i = 0; i < n; i++)
        w->mark[set[i]] = w->stamp;
}

/* From set[0..n) (stamped), the steps reachable from start along successor
 * (forward) or predecessor edges inside the set, not entering stop steps
 * (stop[i] true). Moves them to the front of set, in step order; returns
 * how many. */
static int s_walk(s_part *w, int *set, int n, int start, bool forward, const bool *stop)
{
    int cur = w->stamp, reached = ++w->stamp, head = 0, tail = 0;
    w->queue[tail++] = start;
    w->mark[start] = reached;
    while (head < tail) {
        int i = w->queue[head++];
        const int *adj = forward ? w->succ : w->pred;
        int a = forward ? w->succ_off[i] : w->pred_off[i];
        int b = forward ? w->succ_off[i + 1] : w->pred_off[i + 1];
        for (int e = a; e < b; e++) {
            int j = adj[e];
            if (w->mark[j] == cur && !stop[j]) {
                w->mark[j] = reached;
                w->queue[tail++] = j;
            }
        }
    }
    /* stable partition: reached first */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (w->mark[set[i]] == reached)
            w->queue[k++] = set[i];
    for (int i = 0; i < n; i++)
        if (w->mark[set[i]] != reached)
            w->queue[k++] = set[i];
    memcpy(set, w->queue, (size_t)n * sizeof *set);
    return tail;
}

/* Splits set[0..n) into connected components (edges inside the set):
 * reorders set so that each component is contiguous, writes the component
 * sizes to sizes[], returns their count. */
static int s_components(s_part *w, int *set, int n, int *sizes)
{
    s_stamp(w, set, n);
    int cur = w->stamp, n_comp = 0, done = 0;
    int *out = malloc(((size_t)n + 1) * sizeof *out);
    if (!out)
        return -1;
    for (int s = 0; s < n; s++) {
        if (w->mark[set[s]] != cur)
            continue;
        int comp = ++w->stamp, head = done, tail = done;
        out[tail++] = set[s];
        w->mark[set[s]] = comp;
        while (head < tail) {
            int i = out[head++];
            for (int dir = 0; dir < 2; dir++) {
                const int *adj = dir ? w->succ : w->pred;
                int a = dir ? w->succ_off[i] : w->pred_off[i];
                int b = dir ? w->succ_off[i + 1] : w->pred_off[i + 1];
                for (int e = a; e < b; e++)
                    if (w->mark[adj[e]] == cur) {
                        w->mark[adj[e]] = comp;
                        out[tail++] = adj[e];
                    }
            }
        }
        sizes[n_comp++] = tail - done;
        done = tail;
    }
    memcpy(set, out, (size_t)n * sizeof *set);
    free(out);
    return n_comp;
}

static int s_cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* A stack of step sets still to prune, all in one buffer. */
typedef struct s_work {
    int *buf;   /* sets, back to back */
    int *len;   /* their sizes */
    int n_sets;
    int used;
} s_work;

static void s_push(s_work *wk, const int *set, int n)
{
    memmove(&wk->buf[wk->used], set, (size_t)n * sizeof *set);
    qsort(&wk->buf[wk->used], (size_t)n, sizeof *set, s_cmp_int);
    wk->len[wk->n_sets++] = n;
    wk->used += n;
}

/* Pushes the connected components of set[0..n). */
static int s_push_components(s_part *w, s_work *wk, int *set, int n)
{
    int *sizes = malloc(((size_t)n + 1) * sizeof *sizes);
    int n_comp = sizes ? s_components(w, set, n, sizes) : -1;
    if (n_comp < 0) {
        free(sizes);
        return GX_ENOMEM;
    }
    for (int c = 0, at = 0; c < n_comp; at += sizes[c++])
        s_push(wk, set + at, sizes[c]);
    free(sizes);
    return GX_OK;
}

/* Is value v read outside the steps stamped in w->mark, or a graph output? */
static bool s_leaves(const s_part *w, int v)
{
    const gxd_plan *p = w->p;
    for (size_t o = 0; o < p->n_outputs; o++)
        if (p->outputs[o] == v)
            return true;
    const int d = p->values[v].def;
    for (int k = w->succ_off[d]; k < w->succ_off[d + 1]; k++)
        if (w->mark[w->succ[k]] != w->stamp)
            for (int j = 0; j < p->steps[w->succ[k]].n_in; j++)
                if (p->steps[w->succ[k]].in[j] == v)
                    return true;
    return false;
}

/* Does moving set[0..n) to device d pay (its table's costs; all zero: it
 * does)? If not, why says by how much. */
static bool s_pays(s_part *w, int d, const int *set, int n, char *why, size_t len)
{
    const gx_backend *b = w->p->devices[d];
    if (w->opts->no_cost_check || !b->cost.flops_per_us || !b->cost.bytes_per_us ||
        !b->cost.copy_bytes_per_us)
        return true;
    const gxd_plan *p = w->p;
    double cpu_us = 0, dev_us = 0, copied = 0;
    int copies = 0;
    w->stamp++;
    for (int i = 0; i < n; i++)
        w->mark[set[i]] = w->stamp;
    for (int i = 0; i < n; i++) {
        const gxd_step *s = &p->steps[set[i]];
        const double f = s->cost.flops / b->cost.flops_per_us;
        const double m = s->cost.bytes / b->cost.bytes_per_us;
        cpu_us += gxd_est_us(&s->cost);
        dev_us += b->cost.launch_us + (f > m ? f : m);
        for (int k = 0; k < s->n_in; k++) { /* values made outside come in */
            const int v = s->in[k];
            if (v >= 0 && p->values[v].kind != GXD_VALUE_CONST &&
                (p->values[v].def < 0 || w->mark[p->values[v].def] != w->stamp))
                copies++, copied += (double)p->values[v].nbytes;
        }
        for (int k = 0; k < s->n_out; k++) /* and those read outside go out */
            if (s_leaves(w, s->out[k]))
                copies++, copied += (double)p->values[s->out[k]].nbytes;
    }
    dev_us += copies * b->cost.copy_us + copied / b->cost.copy_bytes_per_us;
    if (dev_us < cpu_us)
        return true;
    snprintf(why, len, "about %.3g us on the cpu, %.3g us on %s with %d cop%s in and out",
             cpu_us, dev_us, b->name, copies, copies == 1 ? "y" : "ies");
    return false;
}

/* Assigns a target subgraph: to device d if it is large enough and moving
 * it pays, else its steps fall out. */
static int s_target(s_part *w, int d, const int *set, int n, int *n_parts)
{
    int rc = GX_OK;
    char cost[128];
    const bool big = n >= w->opts->min_nodes, pays = big && s_pays(w, d, set, n, cost, sizeof cost);
    if (pays) {
        for (int i = 0; i < n; i++) {
            w->dev[set[i]] = d;
            w->part[set[i]] = *n_parts;
        }
        (*n_parts)++;
        return GX_OK;
    }
    char why[320]; /* kept to the length of a plan's record (s_fall) */
    for (int i = 0; i < n && rc == GX_OK; i++) {
        const char *note = w->note[set[i]];
        if (big)
            snprintf(why, sizeof why, "%s%ssubgraph not worth moving: %s", note,
                     note[0] ? ", then " : "", cost);
        else
            snprintf(why, sizeof why, "%s%ssubgraph below the minimum of %d nodes", note,
                     note[0] ? ", then " : "", w->opts->min_nodes);
        rc = s_fall(w, set[i], d, why);
    }
    return rc;
}

/* Pass two on one subgraph of pass one (set[0..n), on device d). */
static int s_prune(s_part *w, int d, int *set, int n, int *n_parts)
{
    const gx_backend *b = w->p->devices[d];
    int rc = GX_OK, kept = 0;
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    for (int i = 0; i < n; i++) {
        const gxd_step *s = &w->p->steps[set[i]];
        for (int k = 0; k < s->n_formal; k++) {
            if (s->in[k] < 0) {
                memset(&in[k], 0, sizeof in[k]);
                in[k].ndim = -1;
            } else {
                in[k] = w->p->values[s->in[k]].view;
            }
        }
        for (int k = 0; k < s->n_out; k++)
            out[k] = w->p->values[s->out[k]].view;
        gx_rule_ctx rctx = {s->op, s->attr, s->n_formal, in, s->n_out, out};
        char why[160] = "";
        if (gx_backend_accepts(b, &rctx, why, sizeof why))
            set[kept++] = set[i];
        else if ((rc = s_fall(w, set[i], d, why)) < 0)
            return rc;
    }
    for (int i = 0; i < kept; i++)
        w->note[set[i]][0] = '\0';

    s_work wk = {.buf = malloc(((size_t)kept + 1) * sizeof(int)),
                 .len = malloc(((size_t)kept + 1) * sizeof(int))};
    int *cur = malloc(((size_t)kept + 1) * sizeof *cur);
    bool *stop = w->stop;
    if (!wk.buf || !wk.len || !cur) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = s_push_components(w, &wk, set, kept)) < 0)
        goto out;
    while (wk.n_sets && rc == GX_OK) {
        int m = wk.len[--wk.n_sets];
        wk.used -= m;
        memcpy(cur, &wk.buf[wk.used], (size_t)m * sizeof *cur);
        s_stamp(w, cur, m);
        int first_in = -1, n_in = 0, last_out = -1, n_out = 0;
        for (int i = 0; i < m; i++) {
            if (s_is_entry(w, cur[i]) && !n_in++)
                first_in = cur[i];
            if (s_is_exit(w, cur[i])) {
                n_out++;
                last_out = cur[i];
            }
        }
        if (n_in <= 1 && n_out <= 1) {
            rc = s_target(w, d, cur, m, n_parts);
            continue;
        }
        /* several entries: forward from the first; else backward from the
         * last exit. The others stop the walk. */
        bool fwd = n_in > 1;
        int start = fwd ? first_in : last_out, other = -1;
        for (int i = 0; i < m; i++) {
            stop[cur[i]] = cur[i] != start && (fwd ? s_is_entry(w, cur[i]) : s_is_exit(w, cur[i]));
            if (stop[cur[i]] && other < 0)
                other = cur[i];
        }
        int r = s_walk(w, cur, m, start, fwd, stop);
        for (int i = 0; i < m; i++)
            stop[cur[i]] = false;
        for (int i = r; i < m; i++)
            snprintf(w->note[cur[i]], sizeof w->note[cur[i]],
                     "pruned: '%s' is a second %s of the subgraph of '%s'",
                     s_name(&w->p->steps[other]), fwd ? "input" : "output",
                     s_name(&w->p->steps[start]));
        s_push(&wk, cur, r);
        rc = s_push_components(w, &wk, cur + r, m - r);
    }
out:
    free(wk.buf), free(wk.len), free(cur);
    return rc;
}

/* Passes one and two for preferred device d. */
/* Does step s read or write a string tensor? */
static bool s_strings(const gxd_plan *p, const gxd_step *s)
{
    for (int k = 0; k < s->n_in + s->n_out; k++) {
        const int v = k < s->n_in ? s->in[k] : s->out[k - s->n_in];
        if (v >= 0 && p->values[v].view.dtype == GX_STRING)
            return true;
    }
    return false;
}

static int s_device(s_part *w, int d, int *n_parts)
{
    const gx_backend *b = w->p->devices[d];
    int *set = malloc((w->n + 1) * sizeof *set);
    int *sizes = malloc((w->n + 1) * sizeof *sizes);
    int n = 0, rc = GX_OK;
    if (!set || !sizes) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < w->n && rc == GX_OK; i++) {
        const gxd_step *s = &w->p->steps[i];
        if (w->dev[i] >= 0 || s->folded || !gx_backend_lists(b, s->op))
            continue;
        if (s->dynamic)
            rc = s_fall(w, (int)i, d, "dynamic shapes: rules need them, runs on the fallback");
        else if (gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL)
            rc = s_fall(w, (int)i, d, "control flow runs on the fallback");
        else if (s_strings(w->p, s))
            rc = s_fall(w, (int)i, d, "string tensors stay on the host (docs/strings.md)");
        else
            set[n++] = (int)i;
    }
    int n_comp = rc == GX_OK ? s_components(w, set, n, sizes) : 0;
    if (n_comp < 0)
        rc = GX_ENOMEM;
    for (int c = 0, at = 0; c < n_comp && rc == GX_OK; at += sizes[c++])
        rc = s_prune(w, d, set + at, sizes[c], n_parts);
out:
    free(set), free(sizes);
    return rc;
}

/* The fallback's partitions: connected runs of steps left to it. */
static int s_fallback(s_part *w, int *n_parts)
{
    int *set = malloc((w->n + 1) * sizeof *set);
    int *sizes = malloc((w->n + 1) * sizeof *sizes);
    int n = 0;
    if (!set || !sizes) {
        free(set), free(sizes);
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < w->n; i++)
        if (w->dev[i] < 0) {
            w->dev[i] = 0;
            if (!w->p->steps[i].folded)
                set[n++] = (int)i;
        }
    int n_comp = s_components(w, set, n, sizes);
    for (int c = 0, at = 0; c < n_comp; at += sizes[c++]) {
        for (int i = 0; i < sizes[c]; i++)
            w->part[set[at + i]] = *n_parts;
        (*n_parts)++;
    }
    free(set), free(sizes);
    return n_comp < 0 ? GX_ENOMEM : GX_OK;
}


/* Device a value is on before any copy: its producer's, else the fallback
 * (graph inputs); -1 for constants and folded values (on every device). */
static int s_value_device(const s_part *w, int v)
{
    int d = s_producer(w->p, v);
    if (d >= 0)
        return w->dev[d];
    return w->p->values[v].kind == GXD_VALUE_INPUT ? 0 : -1;
}

/* A new value: v moved to device d, made by step `step` (a new index). */
static int s_copy_value(s_part *w, int v, int d, int step, int *out)
{
    gxd_plan *p = w->p;
    const gxd_value *src = &p->values[v];
    size_t len = strlen(src->name) + strlen(p->devices[d]->name) + 2;
    char *name = gxd_plan_own(p, len);
    if (!name)
        return GX_ENOMEM;
    snprintf(name, len, "%s@%s", src->name, p->devices[d]->name);
    gxd_value *c = &p->values[p->n_values];
    *c = *src;
    c->name = name;
    c->kind = GXD_VALUE_TEMP;
    c->keyed = false;
    c->view.data = NULL;
    c->def = step;
    c->buffer = -1;
    c->offset = 0;
    *out = (int)p->n_values++;
    return GX_OK;
}

/* The copy step that moves value v to device d, writing value c. */
static int s_copy_step(s_part *w, int v, int c, int d, gxd_step *s)
{
    int rc = gxd_step_move(w->p, "copy", v, c, s);
    s->device = d;
    s->copy = true;
    return rc;
}

/* Inserts a copy step on every edge between devices. copy_of[v * nd + d]:
 * the copy of value v on device d, made once and read by every step of d
 * that needs it. */
static int s_copies(s_part *w)
{
    gxd_plan *p = w->p;
    size_t nd = p->n_devices, nv = p->n_values, n_copies = 0;
    int *copy_of = malloc((nv * nd + 1) * sizeof *copy_of);
    bool *is_out = calloc(nv + 1, sizeof *is_out);
    int rc = GX_ENOMEM;
    if (!copy_of || !is_out)
        goto out;
    for (size_t o = 0; o < p->n_outputs; o++)
        is_out[p->outputs[o]] = true;
    /* count first: values and steps grow once */
    for (size_t i = 0; i < nv * nd; i++)
        copy_of[i] = -1;
    for (size_t i = 0; i < w->n; i++) {
        const gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in && !s->folded; k++) {
            int v = s->in[k], vd = v >= 0 ? s_value_device(w, v) : -1;
            if (vd >= 0 && vd != w->dev[i] && copy_of[(size_t)v * nd + (size_t)w->dev[i]] < 0) {
                copy_of[(size_t)v * nd + (size_t)w->dev[i]] = 0;
                n_copies++;
            }
        }
        for (int k = 0; k < s->n_out && !s->folded; k++)
            if (is_out[s->out[k]] && w->dev[i] != 0 && copy_of[(size_t)s->out[k] * nd] < 0) {
                copy_of[(size_t)s->out[k] * nd] = 0;
                n_copies++;
            }
    }
    if (!n_copies) {
        rc = GX_OK;
        goto out;
    }
    gxd_value *vals = realloc(p->values, (nv + n_copies + 1) * sizeof *vals);
    if (!vals)
        goto out;
    p->values = vals;
    gxd_step *steps = calloc(w->n + n_copies + 1, sizeof *steps);
    int *dev = malloc((w->n + n_copies + 1) * sizeof *dev);
    int *part = malloc((w->n + n_copies + 1) * sizeof *part);
    int *renum = malloc((w->n + 1) * sizeof *renum);
    if (!steps || !dev || !part || !renum) {
        free(steps), free(dev), free(part), free(renum);
        goto out;
    }
    for (size_t i = 0; i < nv * nd; i++)
        copy_of[i] = -1;
    size_t m = 0;
    rc = GX_OK;
    for (size_t i = 0; i < w->n && rc == GX_OK; i++) {
        gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in && !s->folded && rc == GX_OK; k++) {
            int v = s->in[k], vd = v >= 0 ? s_value_device(w, v) : -1, sd = w->dev[i];
            if (vd < 0 || vd == sd)
                continue;
            int *c = &copy_of[(size_t)v * nd + (size_t)sd];
            if (*c < 0 && (rc = s_copy_value(w, v, sd, (int)m, c)) == GX_OK &&
                (rc = s_copy_step(w, v, *c, sd, &steps[m])) == GX_OK) {
                dev[m] = sd;
                part[m++] = -1;
            }
            s->in[k] = *c;
        }
        renum[i] = (int)m;
        steps[m] = *s;
        dev[m] = w->dev[i];
        part[m++] = w->part[i];
        s->in = s->out = s->succ = NULL; /* moved; the rest is still read */
        s->sub = NULL;
        for (int k = 0; k < steps[renum[i]].n_out && !steps[renum[i]].folded && rc == GX_OK; k++) {
            int v = steps[renum[i]].out[k];
            if (!is_out[v] || w->dev[i] == 0)
                continue;
            int *c = &copy_of[(size_t)v * nd];
            if ((rc = s_copy_value(w, v, 0, (int)m, c)) == GX_OK &&
                (rc = s_copy_step(w, v, *c, 0, &steps[m])) == GX_OK) {
                dev[m] = 0;
                part[m++] = -1;
            }
        }
    }
    if (rc == GX_OK && m != w->n + n_copies) { /* both loops must agree */
        fprintf(stderr, "%s:%d: partition: %zu copies counted, %zu made\n", __FILE__, __LINE__,
                n_copies, m - w->n);
        abort();
    }
    /* the old array is empty now but for steps not reached on failure */
    for (size_t i = 0; i < w->n; i++) {
        free(p->steps[i].in), free(p->steps[i].out), free(p->steps[i].succ);
        gxd_subplans_destroy(&p->steps[i].sub);
    }
    free(p->steps);
    p->steps = steps;
    if (rc == GX_OK) {
        for (size_t v = 0; v < nv; v++)
            if (p->values[v].def >= 0)
                p->values[v].def = renum[p->values[v].def];
        for (size_t o = 0; o < p->n_outputs; o++) {
            int c = copy_of[(size_t)p->outputs[o] * nd];
            if (c >= 0)
                p->outputs[o] = c;
        }
        for (size_t f = 0; f < p->n_fell; f++)
            p->fell[f].step = renum[p->fell[f].step];
        p->n_copies = n_copies;
    }
    p->n_steps = m; /* on failure, what gxd_plan_destroy must free */
    free(w->dev), free(w->part), free(renum);
    w->dev = dev;
    w->part = part;
    w->n = m;
out:
    free(copy_of), free(is_out);
    return rc;
}

/* Fills plan->parts from the steps' part numbers (final indices). */
static int s_records(s_part *w, int n_parts)
{
    gxd_plan *p = w->p;
    /* number partitions by their first step */
    int *map = malloc(((size_t)n_parts + 1) * sizeof *map);
    if (!map || !(p->parts = calloc((size_t)n_parts + 1, sizeof *p->parts))) {
        free(map);
        return GX_ENOMEM;
    }
    for (int i = 0; i < n_parts; i++)
        map[i] = -1;
    int next = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        s->device = w->dev[i];
        s->part = w->part[i];
        if (s->part < 0)
            continue;
        if (map[s->part] < 0) {
            map[s->part] = next++;
            p->parts[map[s->part]] = (gxd_part){.device = s->device, .entry = -1, .exit = -1};
        }
        s->part = map[s->part];
        p->parts[s->part].n_steps++;
    }
    p->n_parts = (size_t)next;
    free(map);
    /* entries and exits, on the final steps (copies are outside every
     * part): leaves[v], value v is read outside its producer's part or is
     * a graph output */
    bool *leaves = calloc(p->n_values + 1, sizeof *leaves);
    if (!leaves)
        return GX_ENOMEM;
    for (size_t o = 0; o < p->n_outputs; o++)
        leaves[p->outputs[o]] = true;
    for (size_t j = 0; j < p->n_steps; j++)
        for (int k = 0; k < p->steps[j].n_in; k++) {
            int d = s_producer(p, p->steps[j].in[k]);
            if (d >= 0 && p->steps[d].part != p->steps[j].part)
                leaves[p->steps[j].in[k]] = true;
        }
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->part < 0)
            continue;
        gxd_part *pt = &p->parts[s->part];
        bool entry = false, exit = false;
        for (int k = 0; k < s->n_in; k++) {
            int v = s->in[k], d = s_producer(p, v);
            entry = entry || (d >= 0 ? p->steps[d].part != s->part
                                     : v >= 0 && p->values[v].kind == GXD_VALUE_INPUT);
        }
        for (int k = 0; k < s->n_out; k++)
            exit = exit || leaves[s->out[k]];
        if (entry && !pt->n_entries++)
            pt->entry = (int)i;
        if (exit && !pt->n_exits++)
            pt->exit = (int)i;
    }
    free(leaves);
    for (size_t i = 0; i < p->n_parts; i++) {
        if (p->parts[i].n_entries > 1)
            p->parts[i].entry = -1;
        if (p->parts[i].n_exits > 1)
            p->parts[i].exit = -1;
    }
    return GX_OK;
}

/* plan->devices from the options: the CPU first, then the backends listed
 * before it in order of preference (those after it would get nothing). */
static int s_devices(gxd_cstate *st, const gxd_partition_opts *o)
{
    gxd_plan *p = st->plan;
    p->devices[0] = gx_backend_cpu();
    p->n_devices = 1;
    for (size_t i = 0; i < o->n_backends && i < GXD_MAX_DEVICES; i++) {
        const gx_backend *b = o->backends[i];
        char why[160];
        bool dup = false;
        if (b == gx_backend_cpu())
            break;
        for (size_t k = 0; k < p->n_devices; k++)
            dup = dup || p->devices[k] == b;
        if (dup || p->n_devices == GXD_MAX_DEVICES)
            continue;
        if (!gx_backend_runnable(b, why, sizeof why))
            return gx_errf(st->err, st->errlen, GX_EINVAL, "partition: backend '%s': %s",
                           b->name, why);
        p->devices[p->n_devices++] = b;
    }
    return GX_OK;
}

int gxd_pass_partition(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    gxd_partition_opts def = s_defaults();
    const gxd_partition_opts *o = st->lim->part ? st->lim->part : &def;
    int rc;
    if ((rc = s_devices(st, o)) < 0)
        return rc;
    if (o->off) {
        for (size_t i = 0; i < p->n_steps; i++)
            p->steps[i].part = -1;
        return GX_OK;
    }
    s_part w = {.st = st, .p = p, .opts = o, .n = p->n_steps};
    size_t n1 = w.n + 1;
    int n_parts = 0;
    rc = GX_ENOMEM;
    if (!(w.dev = malloc(n1 * sizeof *w.dev)) || !(w.part = malloc(n1 * sizeof *w.part)) ||
        !(w.note = calloc(n1, sizeof *w.note)) || !(w.mark = calloc(n1, sizeof *w.mark)) ||
        !(w.queue = malloc(n1 * sizeof *w.queue)) || !(w.stop = calloc(n1, sizeof *w.stop)) ||
        s_edges(&w) < 0)
        goto out;
    for (size_t i = 0; i < w.n; i++)
        w.dev[i] = w.part[i] = -1;
    for (size_t d = 1; d < p->n_devices; d++)
        if ((rc = s_device(&w, (int)d, &n_parts)) < 0)
            goto out;
    for (size_t i = 0; i < w.n; i++)
        if (p->steps[i].dev_half && w.dev[i] < 1) { /* the CPU has no kernel for it */
            st->half_left = true;
            rc = gx_errf(st->err, st->errlen, GX_EDTYPE,
                         "node '%s' (%s): no device took its %s step, which the CPU runs in "
                         "float32 only", s_name(&p->steps[i]), p->steps[i].node->op,
                         gx_dtype_name(p->values[p->steps[i].out[0]].view.dtype));
            goto out;
        }
    if ((rc = s_fallback(&w, &n_parts)) < 0 || (rc = s_copies(&w)) < 0 ||
        (rc = s_records(&w, n_parts)) < 0)
        goto out;
    rc = GX_OK;
out:
    free(w.dev), free(w.part), free(w.note), free(w.mark), free(w.queue), free(w.stop);
    free(w.pred_off), free(w.pred), free(w.succ_off), free(w.succ);
    if (rc == GX_ENOMEM)
        return gx_errf(st->err, st->errlen, rc, "out of memory");
    return rc;
}

/* "entry 'a'", "2 entries", "no entry" */
static void s_ends(FILE *out, const gxd_plan *p, int n, int step, const char *one,
                   const char *many)
{
    if (n == 1)
        fprintf(out, "%s '%s'", one, s_name(&p->steps[step]));
    else if (n)
        fprintf(out, "%d %s", n, many);
    else
        fprintf(out, "no %s", one);
}

void gxd_plan_partition_explain(const gxd_plan *p, FILE *out)
{
    fprintf(out, "devices:");
    for (size_t d = 0; d < p->n_devices; d++)
        fprintf(out, " %s%s", p->devices[d]->name, d ? "" : " (fallback)");
    fprintf(out, "\n");
    for (size_t i = 0; i < p->n_parts; i++) {
        const gxd_part *pt = &p->parts[i];
        fprintf(out, "partition %zu on %s: %d step%s, ", i, p->devices[pt->device]->name,
                pt->n_steps, pt->n_steps == 1 ? "" : "s");
        s_ends(out, p, pt->n_entries, pt->entry, "entry", "entries");
        fputs(", ", out);
        s_ends(out, p, pt->n_exits, pt->exit, "exit", "exits");
        fputc('\n', out);
    }
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].copy)
            fprintf(out, "copy '%s' -> '%s' (to %s)\n", p->values[p->steps[i].in[0]].name,
                    p->values[p->steps[i].out[0]].name, p->devices[p->steps[i].device]->name);
    for (size_t i = 0; i < p->n_fell; i++)
        fprintf(out, "'%s' (%s) fell out of %s: %s\n", s_name(&p->steps[p->fell[i].step]),
                p->steps[p->fell[i].step].node->op, p->devices[p->fell[i].device]->name,
                p->fell[i].why);
}
