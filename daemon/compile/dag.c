/*
 * Pass 9, dag (seed 002). Contract: every step that runs knows how many
 * steps must finish before it (n_preds: the producers of its inputs, each
 * counted once) and which steps wait for it (succ); its estimated time
 * (est_us, from the schema's cost); plan->width is the most steps at one
 * dependency level. Folded steps have no edges: their outputs are constants.
 *
 * The step order memplan assumed is one order among many once independent
 * steps run at the same time, so the DAG executors get a buffer assignment
 * of their own (dag_offset): two values share memory only when every step
 * touching the first (its producer and all its readers) is an ancestor of
 * the second's producer, which holds in every order the DAG allows. Values
 * are packed into slots: a value joins a slot whose last occupant is done
 * before it, else opens a slot; a slot whose last occupant is a graph
 * output is closed. A view (memplan) is placed where its source is, and
 * its readers count as its source's. Plans with more than GXD_DAG_MAX_STEPS steps or
 * GXD_DAG_MAX_VALUES values skip the analysis (dag_ok false, dag_why says
 * so: they run in step order only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

#define GXD_DAG_MAX_STEPS 4096
#define GXD_DAG_MAX_VALUES 16384


/* Producer step of value v, or -1 (input, constant, folded). */
static int s_producer(const gxd_plan *p, int v)
{
    if (v < 0)
        return -1;
    int d = p->values[v].def;
    return d >= 0 && !p->steps[d].folded ? d : -1;
}

static int s_edges(gxd_plan *p)
{
    int *mark = malloc((p->n_steps + 1) * sizeof *mark);
    int *level = calloc(p->n_steps + 1, sizeof *level);
    int *per_level = calloc(p->n_steps + 1, sizeof *per_level);
    if (!mark || !level || !per_level) {
        free(mark), free(level), free(per_level);
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < p->n_steps; i++)
        mark[i] = -1;
    /* count, then fill, the successor lists */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < p->n_steps; i++) {
            gxd_step *s = &p->steps[i];
            if (s->folded)
                continue;
            for (int k = 0; k < s->n_in; k++) {
                int d = s_producer(p, s->in[k]);
                if (d < 0 || mark[d] == (int)i * 2 + pass)
                    continue;
                mark[d] = (int)i * 2 + pass;
                if (pass == 0) {
                    p->steps[d].n_succ++;
                    s->n_preds++;
                    if (level[d] + 1 > level[i])
                        level[i] = level[d] + 1;
                } else {
                    p->steps[d].succ[p->steps[d].n_succ++] = (int)i;
                }
            }
        }
        if (pass == 0)
            for (size_t i = 0; i < p->n_steps; i++) {
                gxd_step *s = &p->steps[i];
                if (s->n_succ && !(s->succ = malloc((size_t)s->n_succ * sizeof *s->succ))) {
                    free(mark), free(level), free(per_level);
                    return GX_ENOMEM;
                }
                s->n_succ = 0;
            }
    }
    p->width = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        if (!p->steps[i].folded && ++per_level[level[i]] > p->width)
            p->width = per_level[level[i]];
    free(mark), free(level), free(per_level);
    return GX_OK;
}

/* anc[s]: bitset of the steps that finish before step s starts. */
static uint64_t *s_ancestors(const gxd_plan *p, size_t words)
{
    uint64_t *anc = calloc(p->n_steps * words + 1, sizeof *anc);
    if (!anc)
        return NULL;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_succ; k++) {
            uint64_t *dst = &anc[(size_t)s->succ[k] * words], *src = &anc[i * words];
            for (size_t w = 0; w < words; w++)
                dst[w] |= src[w];
            dst[i / 64] |= 1ull << (i % 64);
        }
    }
    return anc;
}

/* Is every step touching value v an ancestor of step s? */
static bool s_done_before(const gxd_plan *p, const uint64_t *anc, size_t words, const int *rd_off,
                          const int *readers, int v, int s)
{
    const gxd_value *val = &p->values[v];
    const uint64_t *a = &anc[(size_t)s * words];
    if (val->last_use >= (int)p->n_steps) /* graph output */
        return false;
    if (val->def >= 0 && !(a[val->def / 64] >> (val->def % 64) & 1))
        return false;
    for (int r = rd_off[v]; r < rd_off[v + 1]; r++)
        if (!(a[readers[r] / 64] >> (readers[r] % 64) & 1))
            return false;
    return true;
}

static bool s_placed(const gxd_value *v)
{
    return (v->kind == GXD_VALUE_INPUT || v->kind == GXD_VALUE_TEMP) && !v->is_view;
}

/* The value whose readers a read of v counts as: v's source if v is a view. */
static int s_read_as(const gxd_plan *p, int v)
{
    return p->values[v].is_view ? gxd_view_source(p, v) : v;
}

/* The DAG executors' buffer assignment (see the top comment). */
static int s_dag_layout(gxd_plan *p)
{
    size_t nv = p->n_values, words = (p->n_steps + 63) / 64;
    int *rd_off = calloc(nv + 2, sizeof *rd_off), *readers = NULL;
    int *slot_of = malloc((nv + 1) * sizeof *slot_of);        /* value -> slot */
    int *slot_last = malloc((nv + 1) * sizeof *slot_last);    /* slot -> last occupant */
    size_t *slot_size = calloc(nv + 1, sizeof *slot_size);
    uint64_t *anc = s_ancestors(p, words);
    size_t n_rd = 0, n_slots = 0, n_open = 0;
    size_t *order = NULL, *bucket = NULL;
    int *open = NULL; /* slots that may still be reused */
    int rc = GX_ENOMEM;
    if (!rd_off || !slot_of || !slot_last || !slot_size || !anc)
        goto out;
    for (size_t i = 0; i < p->n_steps; i++)
        for (int k = 0; k < p->steps[i].n_in; k++)
            if (p->steps[i].in[k] >= 0 && !p->steps[i].folded)
                rd_off[s_read_as(p, p->steps[i].in[k]) + 1]++, n_rd++;
    for (size_t v = 0; v < nv; v++)
        rd_off[v + 1] += rd_off[v];
    if (!(readers = malloc((n_rd + 1) * sizeof *readers)))
        goto out;
    {
        int *fill = slot_of; /* borrowed as a cursor per value */
        for (size_t v = 0; v < nv; v++)
            fill[v] = rd_off[v];
        for (size_t i = 0; i < p->n_steps; i++)
            for (int k = 0; k < p->steps[i].n_in; k++)
                if (p->steps[i].in[k] >= 0 && !p->steps[i].folded)
                    readers[fill[s_read_as(p, p->steps[i].in[k])]++] = (int)i;
    }
    /* values in order of their producer (memplan's order: inputs first):
     * a counting sort by def + 1 */
    if (!(order = malloc((nv + 1) * sizeof *order)) ||
        !(bucket = calloc(p->n_steps + 3, sizeof *bucket)) ||
        !(open = malloc((nv + 1) * sizeof *open)))
        goto out;
    for (size_t v = 0; v < nv; v++)
        bucket[p->values[v].def + 2]++;
    for (size_t b = 1; b < p->n_steps + 3; b++)
        bucket[b] += bucket[b - 1];
    for (size_t v = 0; v < nv; v++)
        order[bucket[p->values[v].def + 1]++] = v;
    for (size_t oi = 0; oi < nv; oi++) {
        size_t v = order[oi];
        gxd_value *val = &p->values[v];
        if (!s_placed(val))
            continue;
        int d = val->def;
        size_t need = gxd_aligned(val->nbytes);
        int best = -1;
        size_t best_at = 0;
        for (size_t oj = 0; oj < n_open && d >= 0; oj++) {
            int sl = open[oj];
            if (p->values[slot_last[sl]].mem != val->mem) /* another device's memory */
                continue;
            if (!s_done_before(p, anc, words, rd_off, readers, slot_last[sl], d))
                continue;
            /* smallest slot that fits, else the largest */
            if (best < 0 ||
                (slot_size[sl] >= need
                     ? slot_size[best] < need || slot_size[sl] < slot_size[best]
                     : slot_size[best] < need && slot_size[sl] > slot_size[best])) {
                best = sl;
                best_at = oj;
            }
        }
        if (best < 0) {
            best = (int)n_slots++;
            best_at = n_open++;
            open[best_at] = best;
        }
        if (slot_size[best] < need)
            slot_size[best] = need;
        slot_last[best] = (int)v;
        slot_of[v] = best;
        if (val->last_use >= (int)p->n_steps) /* a graph output: never free again */
            open[best_at] = open[--n_open];
    }
    {
        /* each device's slots one after another in its own arena */
        size_t *slot_off = calloc(n_slots + 1, sizeof *slot_off);
        size_t end[GXD_MAX_DEVICES] = {0};
        if (!slot_off || !(p->dag_offset = calloc(nv + 1, sizeof *p->dag_offset))) {
            free(slot_off);
            goto out;
        }
        for (size_t sl = 0; sl < n_slots; sl++) {
            const int mem = p->values[slot_last[sl]].mem;
            slot_off[sl] = end[mem];
            end[mem] += slot_size[sl];
        }
        for (size_t v = 0; v < nv; v++)
            if (s_placed(&p->values[v]))
                p->dag_offset[v] = slot_off[slot_of[v]];
        for (size_t v = 0; v < nv; v++)
            if (p->values[v].is_view)
                p->dag_offset[v] = p->dag_offset[gxd_view_source(p, (int)v)];
        p->dag_arena_bytes = end[0];
        for (size_t d = 1; d < p->n_devices; d++)
            p->dev_dag_arena_bytes[d] = end[d];
        free(slot_off);
    }
    rc = GX_OK;
out:
    free(rd_off), free(readers), free(slot_of), free(slot_last), free(slot_size), free(anc);
    free(order), free(bucket), free(open);
    return rc;
}

int gxd_pass_dag(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    if (!(p->stats = calloc(p->n_steps + 1, sizeof *p->stats)))
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        s->est_us = s->folded ? 0
                    : s->n_out == 1 && s->out[0] >= 0 && p->values[s->out[0]].is_view
                        ? GXD_EST_STEP_US /* copies nothing */
                        : gxd_est_us(&s->cost);
        p->n_control += !s->folded && (gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL) != 0;
    }
    if (s_edges(p) < 0)
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    if (p->n_steps > GXD_DAG_MAX_STEPS || p->n_values > GXD_DAG_MAX_VALUES) {
        snprintf(p->dag_why, sizeof p->dag_why,
                 "%zu steps and %zu values: out-of-order layout only up to %d and %d",
                 p->n_steps, p->n_values, GXD_DAG_MAX_STEPS, GXD_DAG_MAX_VALUES);
        return GX_OK;
    }
    if (s_dag_layout(p) < 0)
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    for (size_t d = 0; d < p->n_devices; d++) {
        const size_t bytes = d ? p->dev_dag_arena_bytes[d] : p->dag_arena_bytes;
        if (bytes > (uint64_t)st->lim->max_arena_bytes) {
            snprintf(p->dag_why, sizeof p->dag_why,
                     "running out of order needs an arena of %zu bytes on %s (limit %lld)",
                     bytes, p->devices[d]->name, (long long)st->lim->max_arena_bytes);
            return GX_OK;
        }
    }
    p->dag_ok = true;
    return GX_OK;
}
