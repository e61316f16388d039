/* Dynamic batching: which jobs merge, their inputs merged, their outputs
 * split. See batcher.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "daemon/batcher.h"
#include "daemon/models.h"
#include "daemon/queue.h"

bool gxd_batch_plan_ok(const gxd_job *j, const gxd_plan *plan, int64_t *rows, char *why,
                       size_t len)
{
    *rows = -1;
    if (j->kind != GXD_JOB_RUN || j->mode != GX_MODE_AUTO) {
        snprintf(why, len, "mode %s was requested", gx_mode_name(j->mode));
        return false;
    }
    if (plan->n_dynamic || plan->n_control) {
        snprintf(why, len, "the plan has steps whose shapes are known only at run time");
        return false;
    }
    if (plan->n_inputs == 0) {
        snprintf(why, len, "the graph has no input");
        return false;
    }
    const gx_graph *g = j->model->graph;
    for (size_t k = 0; k < g->n_inputs; k++)
        if (g->inputs[k].ndim >= 1 && g->inputs[k].shape[0] >= 0) {
            snprintf(why, len, "input '%s' declares axis 0 of %lld, not a symbolic batch",
                     g->inputs[k].name, (long long)g->inputs[k].shape[0]);
            return false;
        }
    for (size_t k = 0; k < plan->n_inputs; k++) {
        const gxd_value *v = &plan->values[plan->inputs[k]];
        if (v->keyed) {
            snprintf(why, len, "input '%s' is keyed (its values shape the plan)", v->name);
            return false;
        }
        if (v->view.ndim < 1 || (*rows >= 0 && v->view.shape[0] != *rows)) {
            snprintf(why, len, "input '%s' has no axis 0 shared with the other inputs", v->name);
            return false;
        }
        *rows = v->view.shape[0];
    }
    if (*rows < 1) {
        snprintf(why, len, "an empty batch");
        return false;
    }
    return true;
}

/* The index of j's input named name, or j->n_in. */
static size_t s_input(const gxd_job *j, const char *name)
{
    size_t i = 0;
    while (i < j->n_in && strcmp(j->in[i].name, name) != 0)
        i++;
    return i;
}

bool gxd_batch_like(const gxd_job *lead, const gxd_job *j, size_t n, void *arg)
{
    const gxd_batch_like_arg *la = arg;
    (void)n;
    if (j->kind != GXD_JOB_RUN || j->model != lead->model || j->mode != GX_MODE_AUTO ||
        j->priority != lead->priority || atomic_load(&j->cancel))
        return false;
    if (j->deadline_us && j->deadline_us < gxd_now_us() + la->run_us)
        return false;
    if (j->n_want != lead->n_want)
        return false;
    for (size_t i = 0; i < j->n_want; i++)
        if (strcmp(j->want[i], lead->want[i]) != 0)
            return false;
    /* every graph input once, as the leader's: names, dtypes, shapes */
    const gx_graph *g = la->graph;
    if (j->n_in != g->n_inputs)
        return false;
    for (size_t k = 0; k < g->n_inputs; k++) {
        size_t i = s_input(j, g->inputs[k].name);
        if (i == j->n_in)
            return false; /* with n_in == n_inputs, also rules out a name given twice */
        const gx_view *a = &j->in[i].view, *b = &la->inputs[k];
        if (a->dtype != b->dtype || a->ndim != b->ndim ||
            memcmp(a->shape, b->shape, (size_t)(a->ndim > 0 ? a->ndim : 0) * sizeof a->shape[0]))
            return false;
    }
    return true;
}

void gxd_batch_views(const gxd_job *j, const gx_graph *g, gx_view *views)
{
    for (size_t k = 0; k < g->n_inputs; k++)
        views[k] = j->in[s_input(j, g->inputs[k].name)].view;
}

int gxd_batch_concat(size_t n_inputs, const gx_view *const *views, size_t n, gx_view *merged,
                     void **bufs)
{
    for (size_t k = 0; k < n_inputs; k++) {
        const gx_view *v0 = &views[0][k];
        const size_t nb = (size_t)v0->numel * gx_dtype_size(v0->dtype);
        merged[k] = *v0;
        merged[k].shape[0] = v0->shape[0] * (int64_t)n;
        merged[k].numel = v0->numel * (int64_t)n;
        if (!(bufs[k] = gx_aligned_alloc(nb * n + 1)))
            return GX_ENOMEM;
        merged[k].data = bufs[k];
        for (size_t i = 0; i < n; i++)
            if (nb)
                memcpy((char *)bufs[k] + i * nb, views[i][k].data, nb);
    }
    return GX_OK;
}

int gxd_batch_split(const gxd_job *carrier, gxd_job *m, size_t i, size_t n, const char *reason)
{
    m->ran_mode = carrier->ran_mode;
    snprintf(m->device, sizeof m->device, "%s", carrier->device);
    m->workers = carrier->workers;
    m->replicas = carrier->replicas;
    m->batched = (int)n;
    memcpy(m->est_us, carrier->est_us, sizeof m->est_us);
    snprintf(m->reason, sizeof m->reason, "%s", reason);
    m->t_exec = carrier->t_exec;
    m->compile_us += carrier->compile_us;
    if (!(m->out = calloc(carrier->n_out + 1, sizeof *m->out)) ||
        !(m->out_k = calloc(carrier->n_out + 1, sizeof *m->out_k)))
        return gxd_job_fail(m, GX_ENOMEM, "out of memory");
    for (size_t k = 0; k < carrier->n_out; k++) {
        const gxd_job_output *o = &carrier->out[k];
        gxd_job_output *mo = &m->out[m->n_out];
        const size_t part = o->nbytes / n;
        if (!(mo->name = strdup(o->name)))
            return gxd_job_fail(m, GX_ENOMEM, "out of memory");
        m->out_k[m->n_out++] = carrier->out_k[k];
        mo->view = o->view;
        mo->view.shape[0] = o->view.shape[0] / (int64_t)n;
        mo->view.numel = o->view.numel / (int64_t)n;
        mo->nbytes = part;
        if (!(mo->view.data = gx_aligned_alloc(part + 1)))
            return gxd_job_fail(m, GX_ENOMEM, "out of memory");
        if (part)
            memcpy(mo->view.data, (const char *)o->view.data + i * part, part);
    }
    return GX_OK;
}
