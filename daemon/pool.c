/* Pinned workers and job execution. See pool.h. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "daemon/pool.h"
#include "daemon/server.h"

typedef struct gxd_worker {
    gxd_pool *pool;
    int index;
    pthread_t thread;
    bool started;
    gxd_job *current; /* guarded by pool->mu */
} gxd_worker;

struct gxd_pool {
    gxd_ctx *ctx;
    int n;
    gxd_worker *w;
    pthread_mutex_t mu;
};

/* Graph input i of the job's model, matched by name; errors name the
 * missing or unknown input. */
static int s_bind_inputs(gxd_job *j, gx_view *views)
{
    const gx_graph *g = j->model->graph;
    for (size_t i = 0; i < j->n_in; i++) {
        bool known = false;
        for (size_t k = 0; k < g->n_inputs && !known; k++)
            known = strcmp(g->inputs[k].name, j->in[i].name) == 0;
        if (!known)
            return gxd_job_fail(j, GX_EGRAPH, "input '%s' is not an input of the graph", j->in[i].name);
        for (size_t k = 0; k < i; k++)
            if (strcmp(j->in[k].name, j->in[i].name) == 0)
                return gxd_job_fail(j, GX_EGRAPH, "input '%s' given twice", j->in[i].name);
    }
    for (size_t k = 0; k < g->n_inputs; k++) {
        size_t i = 0;
        while (i < j->n_in && strcmp(g->inputs[k].name, j->in[i].name) != 0)
            i++;
        if (i == j->n_in)
            return gxd_job_fail(j, GX_EGRAPH, "missing input '%s'", g->inputs[k].name);
        views[k] = j->in[i].view;
    }
    return GX_OK;
}

/* Copy the wanted outputs out of the frame into buffers for the reply. */
static int s_collect_outputs(gxd_job *j, const gxd_frame *f)
{
    const gx_graph *g = j->model->graph;
    size_t n = j->n_want ? j->n_want : g->n_outputs;
    if (!(j->out = calloc(n + 1, sizeof *j->out)))
        return gxd_job_fail(j, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *name = j->n_want ? j->want[i] : g->outputs[i].name;
        size_t k = 0;
        while (k < g->n_outputs && strcmp(g->outputs[k].name, name) != 0)
            k++;
        if (k == g->n_outputs)
            return gxd_job_fail(j, GX_EGRAPH, "'%s' is not an output of the graph", name);
        const gx_view *v = gxd_frame_output(f, k);
        size_t nbytes = (size_t)v->numel * gx_dtype_size(v->dtype);
        gxd_job_output *o = &j->out[j->n_out];
        o->view = *v;
        o->nbytes = nbytes;
        if (!(o->name = strdup(name)) || !(o->view.data = malloc(nbytes ? nbytes : 1))) {
            free(o->name);
            return gxd_job_fail(j, GX_ENOMEM, "out of memory");
        }
        j->n_out++;
        if (nbytes)
            memcpy(o->view.data, v->data, nbytes);
    }
    return GX_OK;
}

/* Record why the job stops (rc from gxd_exec_should_stop); true if it must. */
static bool s_stopped(gxd_job *j, int rc, const char *when)
{
    if (rc == GX_ECANCELLED)
        gxd_job_fail(j, rc, "job %llu was cancelled %s", (unsigned long long)j->id, when);
    else if (rc == GX_ETIMEDOUT)
        gxd_job_fail(j, rc, "deadline expired %s", when);
    return rc < 0;
}

void gxd_job_execute(gxd_ctx *ctx, gxd_job *j, void **arena, size_t *arena_cap)
{
    char err[1024];
    gx_view inputs[GX_MAX_OP_INPUTS];
    gxd_plan *plan = NULL;
    bool owned = false;
    int rc;
    gxd_exec_stop stop = {&j->cancel, j->deadline_us};
    j->t_start = gxd_now_us();
    if (s_stopped(j, gxd_exec_should_stop(&stop), "before the job could run"))
        goto out;
    if ((rc = gxd_model_verify(j->model, &ctx->limits, err, sizeof err)) < 0) {
        gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    const gx_graph *g = j->model->graph;
    if (j->kind == GXD_JOB_LOAD) {
        /* With fully concrete inputs, compile now: shape errors surface at
         * LOAD and the first RUN finds its plan ready. */
        bool concrete = g->n_inputs <= GX_MAX_OP_INPUTS;
        for (size_t i = 0; i < g->n_inputs && concrete; i++) {
            const gx_value_decl *d = &g->inputs[i];
            memset(&inputs[i], 0, sizeof inputs[i]);
            inputs[i].dtype = d->dtype;
            inputs[i].ndim = d->ndim;
            for (int k = 0; k < d->ndim; k++)
                concrete = concrete && (inputs[i].shape[k] = d->shape[k]) >= 0;
        }
        if (concrete &&
            (rc = gxd_model_plan(j->model, inputs, &ctx->limits, &plan, &owned, &j->compile_us,
                                 err, sizeof err)) < 0)
            gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    if (g->n_inputs > GX_MAX_OP_INPUTS) {
        gxd_job_fail(j, GX_ELIMIT, "graph has more than %d inputs", GX_MAX_OP_INPUTS);
        goto out;
    }
    if (s_bind_inputs(j, inputs) < 0)
        goto out;
    if ((rc = gxd_model_plan(j->model, inputs, &ctx->limits, &plan, &owned, &j->compile_us, err,
                             sizeof err)) < 0) {
        gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    gxd_exec_choice ch;
    if ((rc = gxd_exec_choose(plan, j->mode, &ch, err, sizeof err)) < 0) {
        gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    j->ran_mode = ch.mode;
    j->workers = ch.workers;
    snprintf(j->reason, sizeof j->reason, "%s", ch.reason);
    if (plan->arena_bytes > *arena_cap) {
        free(*arena);
        *arena_cap = 0;
        if (!(*arena = gx_aligned_alloc(plan->arena_bytes))) {
            gxd_job_fail(j, GX_ENOMEM, "cannot allocate an arena of %zu bytes", plan->arena_bytes);
            goto out;
        }
        *arena_cap = plan->arena_bytes;
    }
    if (s_stopped(j, gxd_exec_should_stop(&stop), "before the job could run"))
        goto out;
    j->t_exec = gxd_now_us();
    gxd_frame frame;
    err[0] = '\0';
    if ((rc = gxd_frame_init(&frame, plan, *arena, inputs, &ctx->limits, &stop, err,
                             sizeof err)) == GX_OK) {
        rc = gxd_exec_run(&ch, &frame);
        if (rc == GX_OK)
            s_collect_outputs(j, &frame);
        gxd_frame_fini(&frame);
    }
    if (rc == GX_ECANCELLED || rc == GX_ETIMEDOUT)
        s_stopped(j, rc, "while running");
    else if (rc < 0)
        gxd_job_fail(j, rc, "%s", err[0] ? err : gx_strerror(rc));
out:
    if (owned)
        gxd_plan_destroy(&plan);
    j->t_end = gxd_now_us();
}

static void *s_worker_main(void *arg)
{
    gxd_worker *w = arg;
    gxd_pool *p = w->pool;
    gxd_ctx *ctx = p->ctx;
    void *arena = NULL;
    size_t arena_cap = 0;
    if (gxd_topo_pin_thread(ctx->topo, w->index) < 0)
        GXD_LOG(&ctx->log, GXD_LOG_WARN, "worker %d: could not pin to core %d; running unpinned",
                w->index, gxd_topo_core_os_index(ctx->topo, w->index));
    gxd_job *j;
    while ((j = gxd_queue_pop(&ctx->queue))) {
        pthread_mutex_lock(&p->mu);
        w->current = j;
        pthread_mutex_unlock(&p->mu);
        gxd_job_execute(ctx, j, &arena, &arena_cap);
        pthread_mutex_lock(&p->mu);
        w->current = NULL;
        pthread_mutex_unlock(&p->mu);
        gxd_server_job_done(ctx, j);
    }
    free(arena);
    return NULL;
}

int gxd_pool_start(gxd_ctx *ctx, gxd_pool **out, char *err, size_t errlen)
{
    /* Workers own the parallelism: BLAS must not start threads of its own. */
    openblas_set_num_threads(1);
    gxd_pool *p = calloc(1, sizeof *p);
    int n = gxd_topo_ncores(ctx->topo);
    if (!p || !(p->w = calloc((size_t)n, sizeof *p->w))) {
        free(p);
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    p->ctx = ctx;
    pthread_mutex_init(&p->mu, NULL);
    *out = p;
    for (int i = 0; i < n; i++) {
        p->w[i].pool = p;
        p->w[i].index = i;
        if (pthread_create(&p->w[i].thread, NULL, s_worker_main, &p->w[i]) != 0)
            return gx_errf(err, errlen, GX_EINTERNAL, "cannot start worker %d", i);
        p->w[i].started = true;
        p->n = i + 1;
    }
    return GX_OK;
}

void gxd_pool_join(gxd_pool **pp)
{
    if (!pp || !*pp)
        return;
    gxd_pool *p = *pp;
    for (int i = 0; i < p->n; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].thread, NULL);
    pthread_mutex_destroy(&p->mu);
    free(p->w);
    free(p);
    *pp = NULL;
}

int gxd_pool_size(const gxd_pool *p) { return p ? p->n : 0; }

bool gxd_pool_cancel(gxd_pool *p, const void *identity, size_t identity_len, uint64_t id)
{
    bool found = false;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n && !found; i++) {
        gxd_job *j = p->w[i].current;
        if (j && j->id == id && j->identity_len == identity_len &&
            memcmp(j->identity, identity, identity_len) == 0) {
            atomic_store(&j->cancel, true);
            found = true;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return found;
}

int gxd_pool_busy(gxd_pool *p)
{
    int busy = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n; i++)
        busy += p->w[i].current != NULL;
    pthread_mutex_unlock(&p->mu);
    return busy;
}

void gxd_pool_cancel_all(gxd_pool *p)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n; i++)
        if (p->w[i].current)
            atomic_store(&p->w[i].current->cancel, true);
    pthread_mutex_unlock(&p->mu);
}
