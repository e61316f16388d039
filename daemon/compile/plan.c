/*
 * Pass 11, plan. Contract: every step has the kernel that will run it on the
 * device the partition pass chose (from that device's table), or the one
 * the layout or prepare pass chose; a copy step has none (the executor
 * copies through the devices' tables); steps stay in the dependency order
 * verify chose, copies included; every constant a step of a device without
 * host memory reads is copied into that device's memory once (a value
 * with mem == the device, in plan->dev_consts), and the step reads that
 * copy; every kernel step of a device with a ready slot (ops/backend.h)
 * has been readied (a GPU's generated code compiled now, not in a job).
 * After this pass the plan is immutable but for its run-time caches
 * (compile.h).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

/* Does step s run on a device without host memory? */
static bool s_off_host(const gxd_plan *p, const gxd_step *s)
{
    return !s->folded && !s->copy && !p->devices[s->device]->host_memory;
}

/* Constants read by steps of a device without host memory: copied once
 * into its memory, where every step of it reads them (partition.c:
 * constants are loaded with the plan on every device that reads them).
 * Last of all: the passes before may read constants' data on the host. */
static int s_upload(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    const size_t nd = p->n_devices, nv = p->n_values;
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n += s_off_host(p, &p->steps[i]) ? (size_t)p->steps[i].n_in : 0;
    if (!n)
        return GX_OK;
    int *twin = malloc((nv * nd + 1) * sizeof *twin); /* twin[v * nd + d] */
    gxd_value *vals = realloc(p->values, (nv + n + 1) * sizeof *vals);
    if (vals)
        p->values = vals;
    size_t *dag = p->dag_offset ? realloc(p->dag_offset, (nv + n + 1) * sizeof *dag) : NULL;
    if (dag) { /* constants have no place in an arena */
        memset(dag + nv, 0, (n + 1) * sizeof *dag);
        p->dag_offset = dag;
    }
    gxd_dev_const *dc = vals ? realloc(p->dev_consts, (n + 1) * sizeof *dc) : NULL;
    if (dc)
        p->dev_consts = dc;
    int rc = GX_OK;
    if (!twin || !vals || !dc || (p->dag_offset && !dag)) {
        rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "plan: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nv * nd; i++)
        twin[i] = -1;
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++) {
        gxd_step *s = &p->steps[i];
        if (!s_off_host(p, s))
            continue;
        const gx_backend *b = p->devices[s->device];
        for (int k = 0; k < s->n_in && rc == GX_OK; k++) {
            const int v = s->in[k];
            if (v < 0 || p->values[v].kind != GXD_VALUE_CONST || p->values[v].mem != 0)
                continue;
            int *t = &twin[(size_t)v * nd + (size_t)s->device];
            if (*t < 0) {
                gxd_value *c = &p->values[p->n_values];
                *c = p->values[v];
                c->mem = s->device;
                c->view.data = b->alloc(b, c->nbytes);
                if (!c->view.data) {
                    rc = gx_errf(st->err, st->errlen, GX_ENOMEM,
                                 "%s has no room for constant '%s' (%zu bytes)", b->name,
                                 c->name, c->nbytes);
                    break;
                }
                p->dev_consts[p->n_dev_consts++] =
                    (gxd_dev_const){.device = s->device, .value = (int)p->n_values, .source = v};
                *t = (int)p->n_values++;
                if ((rc = b->copy(b, GX_COPY_TO_DEVICE, c->view.data, p->values[v].view.data,
                                  c->nbytes, NULL)) < 0)
                    rc = gx_errf(st->err, st->errlen, rc, "%s: cannot copy constant '%s' to it",
                                 b->name, c->name);
            }
            s->in[k] = *t;
        }
    }
out:
    free(twin);
    return rc;
}

/* Each kernel step of a device with a ready slot, readied with its
 * attributes and views (after s_upload: constants on the device). */
static int s_ready(gxd_cstate *st)
{
    const gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        const gx_backend *b = p->devices[s->device];
        if (!s_off_host(p, s) || !b->ready || !s->kernel || s->dynamic)
            continue;
        gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
        for (int k = 0; k < s->n_formal; k++) {
            if (s->in[k] >= 0) {
                in[k] = p->values[s->in[k]].view;
            } else {
                memset(&in[k], 0, sizeof in[k]);
                in[k].ndim = -1;
            }
        }
        for (int k = 0; k < s->n_out; k++)
            out[k] = p->values[s->out[k]].view;
        gx_kargs ka = {.attr = s->attr, .n_in = s->n_formal, .in = in, .n_out = s->n_out,
                       .out = out, .nth = 1};
        char why[400];
        int rc = b->ready(b, s->op, s->fused, &ka, why, sizeof why);
        if (rc < 0)
            return gx_errf(st->err, st->errlen, rc, "node '%s' (%s) on %s: %s", s->node->name,
                           s->node->op, b->name, why);
    }
    return GX_OK;
}

int gxd_pass_plan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if (s->reorder || s->layout != GX_LAYOUT_PLAIN || s->kernel || s->copy)
            continue; /* the layout or prepare pass chose the kernel */
        s->kernel = p->devices[s->device]->kernel(s->op);
    }
    int rc = s_upload(st);
    return rc < 0 ? rc : s_ready(st);
}
