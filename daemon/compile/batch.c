/*
 * Pass 10, batch (seed 002's replica split). Contract: reads the plan and
 * writes only p->batch, p->sync_steps, p->batch_why and each step's
 * on_batch (it reads a batched value: a slice runs it on its samples only;
 * the other steps every slice runs whole). batch > 0
 * promises that cutting every batched graph input (the non-keyed ones of
 * rank >= 1, all with one size B >= 2 of axis 0) into slices along axis 0,
 * running each slice through its own plan and concatenating the outputs
 * along axis 0 gives the outputs of the whole batch: every step keeps
 * samples apart (gx_op_batch_separable) and every graph output carries the
 * batch on its axis 0. Otherwise batch is 0 and batch_why says why; the
 * steps that mix samples of a batched value are counted in sync_steps.
 * Never fails: a plan it cannot prove splittable is simply not split; a
 * plan with string values never is.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/compile/passes.h"

static const char *s_node_name(const gxd_step *s)
{
    return s->node && s->node->name && s->node->name[0] ? s->node->name : "?";
}

/* Records the first reason the plan cannot be split: "node 'n' (Op) what". */
static void s_why(gxd_plan *p, bool *first, const char *what, const gxd_step *s)
{
    if (*first)
        snprintf(p->batch_why, sizeof p->batch_why, "node '%s' (%s) %s", s_node_name(s),
                 gx_op_name(s->op), what);
    *first = false;
}

/* Step s has a batched input: does it keep samples apart? Marks its
 * outputs in batched[]; when the plan cannot be split because of s,
 * records the reason (if it is the first) and counts s if it is
 * synchronous. */
static void s_step(gxd_plan *p, const gxd_step *s, int64_t B, bool *batched, bool *first)
{
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    bool in_b[GX_MAX_OP_INPUTS], out_b[GX_MAX_OP_INPUTS];
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    if (s->dynamic) {
        s_why(p, first, "has a batched input and shapes known only at run time", s);
        return;
    }
    if (sc->flags & GX_OPF_CONTROL) {
        s_why(p, first, "runs subgraphs on a batched input", s);
        return;
    }
    if (s->n_formal > GX_MAX_OP_INPUTS || s->n_out > GX_MAX_OP_INPUTS) {
        s_why(p, first, "has too many inputs or outputs to analyse", s);
        return;
    }
    for (int k = 0; k < s->n_formal; k++) {
        in_b[k] = s->in[k] >= 0 && batched[s->in[k]];
        in[k] = s->in[k] >= 0 ? p->values[s->in[k]].view : (gx_view){.ndim = -1};
    }
    for (int k = 0; k < s->n_out; k++)
        out[k] = p->values[s->out[k]].view;
    gx_batch_ctx bc = {.attr = s->attr, .n_in = s->n_formal, .in = in, .in_batched = in_b,
                       .n_out = s->n_out, .out = out, .out_batched = out_b};
    bool sep = s->fused ? gxd_fuse_batch_separable(p, s, in_b, out_b)
                        : gx_op_batch_separable(s->op, &bc);
    bool any_out = false;
    for (int k = 0; sep && k < s->n_out; k++)
        any_out = any_out || out_b[k];
    if (sep && !(s->folded && any_out)) {
        for (int k = 0; k < s->n_out; k++)
            batched[s->out[k]] = out_b[k];
        return;
    }
    if (sc->flags & GX_OPF_READS_SHAPES) {
        /* Shape, Size: a number that changes with the slice */
        s_why(p, first, "reads the batch size", s);
        return;
    }
    /* A synchronous step: its outputs carry the batch again if their axis
     * 0 has its size, so that the steps after it are judged too. */
    p->sync_steps++;
    s_why(p, first, "mixes samples", s);
    for (int k = 0; k < s->n_out; k++)
        batched[s->out[k]] = out[k].ndim >= 1 && out[k].shape[0] == B;
}

void gxd_plan_batch(gxd_plan *p)
{
    p->batch = 0;
    p->sync_steps = 0;
    p->batch_why[0] = '\0';
    bool *batched = calloc(p->n_values + 1, sizeof *batched);
    if (!batched) {
        snprintf(p->batch_why, sizeof p->batch_why, "out of memory while looking for a batch");
        return;
    }

    /* strings stay whole: their records belong to one job (docs/strings.md) */
    for (size_t i = 0; i < p->n_values; i++)
        if (p->values[i].view.dtype == GX_STRING && p->values[i].view.kind == GX_KIND_TENSOR) {
            snprintf(p->batch_why, sizeof p->batch_why,
                     "value '%s' is a string tensor (strings are never split or merged)",
                     p->values[i].name);
            goto out;
        }

    /* The batched inputs and their shared size of axis 0. */
    int64_t B = -1;
    const char *first_name = NULL;
    size_t n_batched = 0;
    for (size_t i = 0; i < p->n_inputs; i++) {
        const gxd_value *v = &p->values[p->inputs[i]];
        if (v->keyed || v->view.ndim < 1)
            continue;
        if (B >= 0 && v->view.shape[0] != B) {
            snprintf(p->batch_why, sizeof p->batch_why,
                     "inputs '%s' and '%s' disagree on axis 0 (%lld vs %lld)", first_name,
                     v->name, (long long)B, (long long)v->view.shape[0]);
            goto out;
        }
        if (B < 0) {
            B = v->view.shape[0];
            first_name = v->name;
        }
        batched[p->inputs[i]] = true;
        n_batched++;
    }
    if (B < 0) {
        snprintf(p->batch_why, sizeof p->batch_why, "no input has an axis 0 to split");
        goto out;
    }
    if (B < 2) {
        snprintf(p->batch_why, sizeof p->batch_why,
                 "a batch of %lld (axis 0 of '%s') cannot be split", (long long)B, first_name);
        goto out;
    }

    /* Batched-ness, value by value, in step order. */
    bool first = true;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        bool any = false;
        for (int k = 0; k < s->n_in; k++)
            any = any || (s->in[k] >= 0 && batched[s->in[k]]);
        s->on_batch = any;
        if (any)
            s_step(p, s, B, batched, &first);
    }
    if (!first)
        goto out;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->on_batch && !s->folded && !p->devices[s->device]->exact_slices) {
            snprintf(p->batch_why, sizeof p->batch_why,
                     "node '%s' runs on %s, whose kernels may round a sample differently in "
                     "another batch size",
                     s->node->name, p->devices[s->device]->name);
            goto out;
        }
    }

    for (size_t i = 0; i < p->n_outputs; i++) {
        const gxd_value *v = &p->values[p->outputs[i]];
        if (!batched[p->outputs[i]] || v->view.ndim < 1 || v->view.shape[0] != B) {
            snprintf(p->batch_why, sizeof p->batch_why, "output '%s' does not carry the batch",
                     v->name);
            goto out;
        }
    }
    p->batch = B;
    snprintf(p->batch_why, sizeof p->batch_why,
             "%lld samples along axis 0 of %zu input%s; every step keeps them apart",
             (long long)B, n_batched, n_batched == 1 ? "" : "s");
out:
    free(batched);
}

int gxd_pass_batch(gxd_cstate *st)
{
    gxd_plan_batch(st->plan);
    return GX_OK;
}
