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
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"


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
    if (!bucket || !order || !active) {
        free(bucket), free(order), free(active);
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
            v->kind == GXD_VALUE_FUSED || v->mem != mem)
            continue;
        v->buffer = (int)buffers++;
        size_t need = gxd_aligned(v->nbytes);
        /* expire values dead before this one is defined */
        size_t w = 0;
        for (size_t a = 0; a < n_active; a++)
            if (values[active[a]].last_use >= v->def)
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
        active[pos] = order[oi];
        n_active++;
        if (off + need > peak)
            peak = off + need;
    }
    free(bucket), free(order), free(active);
    *n_buffers = buffers;
    return peak;
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
    }
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
    return GX_OK;
}
