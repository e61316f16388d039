/*
 * Pass 8, memplan (seeds 002, 004). Contract: every non-constant value gets
 * a logical buffer number and a GX_ALIGN-aligned offset from the arena base
 * such that two values whose lifetimes [def, last_use] overlap never overlap
 * in memory; plan->arena_bytes is the peak. Lifetimes are inclusive, so a
 * step's outputs never share memory with its inputs. One plan serves many
 * arenas: the offsets are relative, each job or replica brings its own base.
 * A kernel's scratch memory is a value of its own, live during its step.
 * Dynamic values are not placed: they live on the heap at run time; nor
 * are the values inside a fused step (the fuse pass): they live in its tiles.
 * Each device without host memory has an arena of its own for the values
 * its steps make (dev_arena_bytes); everything else is in the host's.
 *
 * Views: the output of a reshape (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity) of a value in the host's arena takes no memory of its own: it
 * is marked view and gets its input's buffer and offset, and that input
 * lives until the view's last reader. Its kernel then copies nothing (source
 * and destination are one). Not when either is a graph output (the runner
 * points outputs at the reply, ../runner.c) or a graph input (bound per job).
 *
 * Concat in place: a Concat whose inputs are contiguous runs of its output
 * (nothing outside the axis, plain or NCHW16c with one image) has them
 * written where they belong, in the step-order arena: each such input
 * (an arena value of the host, no graph input or output, no view, in no
 * other Concat, at a GX_ALIGN multiple) gets the output's buffer at its
 * run's offset (placed_in, placed_at), and the output's memory is taken
 * when its first such input is made and kept until the last reader of any
 * of them. The Concat kernel then copies only the other inputs. The DAG
 * executors' layout (pass 9) keeps every value apart, and copies.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/schema.h"


size_t gxd_memplan_assign(gxd_value *values, size_t n_values, int mem, size_t *n_buffers)
{
    /* Values in order of definition (inputs, def == -1, first). */
    int max_def = -1;
    for (size_t i = 0; i < n_values; i++)
        if (values[i].def > max_def)
            max_def = values[i].def;
    size_t nb = (size_t)(max_def + 2);
    size_t *bucket = calloc(nb + 1, sizeof *bucket);
    size_t *order = malloc((n_values + 1) * sizeof *order);
    size_t *active = malloc((n_values + 1) * sizeof *active); /* sorted by offset */
    bool *done = calloc(n_values + 1, sizeof *done); /* Concat outputs placed early */
    if (!bucket || !order || !active || !done) {
        free(bucket), free(order), free(active), free(done);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n_values; i++)
        bucket[values[i].def + 1 + 1]++;
    for (size_t b = 1; b <= nb; b++)
        bucket[b] += bucket[b - 1];
    for (size_t i = 0; i < n_values; i++)
        order[bucket[values[i].def + 1]++] = i;

    size_t n_active = 0, peak = 0, buffers = *n_buffers;
    for (size_t oi = 0; oi < n_values; oi++) {
        gxd_value *v = &values[order[oi]];
        if (v->kind == GXD_VALUE_CONST || v->kind == GXD_VALUE_DYNAMIC ||
            v->kind == GXD_VALUE_FUSED || v->is_view || v->mem != mem)
            continue;
        /* a Concat's output takes its memory when its first input in place
         * is made */
        const size_t at = v->placed_in ? (size_t)v->placed_in - 1 : order[oi];
        if (done[at])
            continue;
        done[at] = true;
        const int def = v->def;
        v = &values[at];
        v->buffer = (int)buffers++;
        size_t need = gxd_aligned(v->nbytes);
        /* expire values dead before this one is defined */
        size_t w = 0;
        for (size_t a = 0; a < n_active; a++)
            if (values[active[a]].last_use >= def)
                active[w++] = active[a];
        n_active = w;
        if (need == 0) {
            v->offset = 0;
            continue;
        }
        /* first fit among the gaps between live blocks */
        size_t off = 0, pos = 0;
        for (; pos < n_active; pos++) {
            const gxd_value *b = &values[active[pos]];
            if (b->offset >= off + need)
                break;
            size_t end = b->offset + gxd_aligned(b->nbytes);
            if (end > off)
                off = end;
        }
        v->offset = off;
        memmove(&active[pos + 1], &active[pos], (n_active - pos) * sizeof *active);
        active[pos] = at;
        n_active++;
        if (off + need > peak)
            peak = off + need;
    }
    free(bucket), free(order), free(active), free(done);
    *n_buffers = buffers;
    return peak;
}

int gxd_view_source(const gxd_plan *plan, int v)
{
    while (plan->values[v].is_view)
        v = plan->steps[plan->values[v].def].in[0];
    return v;
}

int gxd_memory_home(const gxd_plan *plan, int v)
{
    v = gxd_view_source(plan, v);
    return plan->values[v].placed_in ? plan->values[v].placed_in - 1 : v;
}

/* May step i's output be a view of its first input (see the top comment)?
 * Runs once mem and last_use are known. */
static bool s_view_ok(const gxd_plan *p, size_t i)
{
    const gxd_step *s = &p->steps[i];
    if (s->op != GX_OP_RESHAPE && s->op != GX_OP_FLATTEN && s->op != GX_OP_SQUEEZE &&
        s->op != GX_OP_UNSQUEEZE && s->op != GX_OP_IDENTITY)
        return false;
    if (s->folded || s->dynamic || s->copy || s->fused || s->n_out != 1 || s->in[0] < 0)
        return false;
    const gxd_value *x = &p->values[s->in[0]], *y = &p->values[s->out[0]];
    const gxd_value *src = &p->values[gxd_view_source(p, s->in[0])];
    return x->kind == GXD_VALUE_TEMP && y->kind == GXD_VALUE_TEMP && x->mem == 0 && y->mem == 0 &&
           x->view.ndim >= 0 && y->view.ndim >= 0 && x->view.dtype == y->view.dtype &&
           x->view.layout == GX_LAYOUT_PLAIN && y->view.layout == GX_LAYOUT_PLAIN &&
           x->nbytes == y->nbytes && src->last_use < (int)p->n_steps &&
           y->last_use < (int)p->n_steps;
}

/* Marks the views, in step order (so a chain of reshapes views its first
 * input), and makes each view's source live until the view's last reader. */
static void s_mark_views(gxd_plan *p)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        if (!s_view_ok(p, i))
            continue;
        gxd_value *y = &p->values[p->steps[i].out[0]];
        gxd_value *src = &p->values[gxd_view_source(p, p->steps[i].in[0])];
        y->is_view = true;
        if (src->last_use < y->last_use)
            src->last_use = y->last_use;
    }
}

/* The Concat of step i: its inputs that can be written in place in its
 * output (see the top comment) get placed_in and placed_at; the output
 * lives until the last reader of any of them. */
static void s_place_concat(gxd_plan *p, size_t i, bool *root)
{
    const gxd_step *s = &p->steps[i];
    if (s->op != GX_OP_CONCAT || s->folded || s->dynamic || s->copy || s->fused || s->n_out != 1)
        return;
    gxd_value *y = &p->values[s->out[0]];
    if (y->kind != GXD_VALUE_TEMP || y->mem != 0 || y->is_view || y->placed_in ||
        y->view.ndim < 1 || y->last_use >= (int)p->n_steps)
        return;
    int64_t axis = s->attr[GX_CONCAT_AXIS].i;
    if (axis < 0)
        axis += y->view.ndim;
    /* inputs are runs of y: nothing outside the axis (NCHW16c: channel
     * blocks of one image) */
    int64_t outer = 1;
    for (int64_t d = 0; d < axis && d < y->view.ndim; d++)
        outer *= y->view.shape[d];
    if (y->view.layout == GX_LAYOUT_NCHW16C ? axis != 1 || y->view.shape[0] != 1
                                            : y->view.layout != GX_LAYOUT_PLAIN || outer != 1)
        return;
    size_t at = 0;
    for (int k = 0; k < s->n_in; k++) {
        const int v = s->in[k];
        if (v < 0)
            continue;
        gxd_value *x = &p->values[v];
        bool twice = false;
        for (int j = 0; j < k; j++)
            twice = twice || s->in[j] == v;
        if (x->kind == GXD_VALUE_TEMP && x->mem == 0 && !x->is_view && !x->placed_in && !twice &&
            x->def >= 0 && x->last_use < (int)p->n_steps && x->view.layout == y->view.layout &&
            at % GX_ALIGN == 0 && !root[v]) { /* (root: a Concat's output with its own) */
            x->placed_in = s->out[0] + 1;
            x->placed_at = at;
            root[s->out[0]] = true;
            if (y->last_use < x->last_use)
                y->last_use = x->last_use;
        }
        at += x->nbytes;
    }
}

/* One value per step that needs scratch memory. */
static int s_add_scratch(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n += p->steps[i].scratch_bytes && !p->steps[i].folded && !p->steps[i].dynamic;
    if (!n)
        return GX_OK;
    gxd_value *vals = realloc(p->values, (p->n_values + n + 1) * sizeof *vals);
    if (!vals)
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    p->values = vals;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if (!s->scratch_bytes || s->folded || s->dynamic)
            continue;
        gxd_value *v = &p->values[p->n_values];
        memset(v, 0, sizeof *v);
        v->name = s->node->name;
        v->kind = GXD_VALUE_TEMP;
        v->view.dtype = GX_U8;
        v->view.ndim = 1;
        v->view.shape[0] = v->view.numel = (int64_t)s->scratch_bytes;
        v->nbytes = s->scratch_bytes;
        v->def = (int)i;
        v->buffer = -1;
        s->scratch = (int)p->n_values++;
    }
    return GX_OK;
}

int gxd_pass_memplan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    int rc = s_add_scratch(st);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < p->n_values; i++)
        p->values[i].last_use = p->values[i].def; /* a dead value still needs its slot */
    for (size_t i = 0; i < p->n_steps; i++)
        for (int k = 0; k < p->steps[i].n_in; k++) {
            int v = p->steps[i].in[k];
            if (v >= 0 && p->values[v].last_use < (int)i)
                p->values[v].last_use = (int)i;
        }
    for (size_t i = 0; i < p->n_outputs; i++)
        p->values[p->outputs[i]].last_use = (int)p->n_steps;

    p->naive_bytes = 0;
    for (size_t i = 0; i < p->n_values; i++)
        if (p->values[i].kind == GXD_VALUE_INPUT || p->values[i].kind == GXD_VALUE_TEMP)
            p->naive_bytes += gxd_aligned(p->values[i].nbytes);
    for (size_t i = 0; i < p->n_values; i++) {
        gxd_value *v = &p->values[i];
        if (v->kind == GXD_VALUE_CONST)
            continue; /* the prepare pass put it */
        const int d = v->def >= 0 && v->kind != GXD_VALUE_INPUT ? p->steps[v->def].device : 0;
        v->mem = p->devices[d]->host_memory ? 0 : d;
        v->is_view = false;
        v->placed_in = 0;
    }
    s_mark_views(p);
    bool *root = calloc(p->n_values + 1, sizeof *root);
    if (!root)
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->n_steps; i++)
        s_place_concat(p, i, root);
    free(root);
    p->n_buffers = 0;
    for (size_t d = 0; d < p->n_devices; d++) {
        if (d && p->devices[d]->host_memory)
            continue;
        size_t bytes = gxd_memplan_assign(p->values, p->n_values, (int)d, &p->n_buffers);
        if (bytes == SIZE_MAX)
            return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
        if (bytes > (uint64_t)st->lim->max_arena_bytes)
            return gx_errf(st->err, st->errlen, GX_ELIMIT,
                           "the graph needs an arena of %zu bytes on %s (limit %lld)", bytes,
                           p->devices[d]->name, (long long)st->lim->max_arena_bytes);
        *(d ? &p->dev_arena_bytes[d] : &p->arena_bytes) = bytes;
    }
    for (size_t i = 0; i < p->n_values; i++)
        if (p->values[i].placed_in) {
            const gxd_value *y = &p->values[p->values[i].placed_in - 1];
            p->values[i].buffer = y->buffer;
            p->values[i].offset = y->offset + p->values[i].placed_at;
        }
    for (size_t i = 0; i < p->n_values; i++)
        if (p->values[i].is_view) {
            const gxd_value *src = &p->values[gxd_view_source(p, (int)i)];
            p->values[i].buffer = src->buffer;
            p->values[i].offset = src->offset;
        }
    return GX_OK;
}
