/* Pinned workers: start, join, cancel, busy. See pool.h. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/calibrate.h"
#include "daemon/pool.h"
#include "daemon/runner.h"
#include "daemon/team.h"

typedef struct gxd_worker {
    gxd_pool *pool;
    int index;
    pthread_t thread;
    bool started;
    gxd_job *current; /* guarded by pool->mu */
    gxd_arenas arenas;
} gxd_worker;

struct gxd_pool {
    gxd_ctx *ctx;
    int n;
    gxd_worker *w;
    pthread_mutex_t mu;
    gxd_team team;
    gxd_calibration cal; /* measured at start, before any job runs */
    gxd_runner runner;   /* what every job runs with */
    gxd_pool_done_fn done;
    void *done_arg;
};

static void *s_worker_main(void *arg)
{
    gxd_worker *w = arg;
    gxd_pool *p = w->pool;
    gxd_ctx *ctx = p->ctx;
    if (gxd_topo_pin_thread(ctx->topo, w->index) < 0)
        GXD_LOG(&ctx->log, GXD_LOG_WARN, "worker %d: could not pin to core %d; running unpinned",
                w->index, gxd_topo_core_os_index(ctx->topo, w->index));
    gxd_job *j;
    while ((j = gxd_team_next_job(&p->team))) {
        pthread_mutex_lock(&p->mu);
        w->current = j;
        pthread_mutex_unlock(&p->mu);
        gxd_queue_release(&ctx->queue, j); /* a cancel finds it as current from now on */
        gxd_runner_execute(&p->runner, &w->arenas, j);
        pthread_mutex_lock(&p->mu);
        w->current = NULL;
        pthread_mutex_unlock(&p->mu);
        /* the jobs merged into its run (daemon/batcher.h), each answered */
        gxd_job *m = j->batch_next;
        j->batch_next = NULL;
        p->done(p->done_arg, j);
        while (m) {
            gxd_job *next = m->batch_next;
            m->batch_next = NULL;
            p->done(p->done_arg, m);
            m = next;
        }
    }
    gxd_arenas_fini(&w->arenas);
    return NULL;
}

int gxd_pool_start(gxd_ctx *ctx, gxd_pool_done_fn done, void *done_arg, gxd_pool **out,
                   char *err, size_t errlen)
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
    p->done = done;
    p->done_arg = done_arg;
    pthread_mutex_init(&p->mu, NULL);
    gxd_team_init(&p->team, &ctx->queue);
    p->runner = (gxd_runner){.ctx = ctx,
                             .team = &p->team,
                             .workers = n,
                             .team_max = n < GXD_MAX_TEAM ? n : GXD_MAX_TEAM,
                             .cal = &p->cal};
    *out = p;
    for (int i = 0; i < n; i++) {
        /* Calibrate with every worker but one started: this thread leads
         * the teams as a worker would, beside n - 1 helpers, on n cores
         * (with all n idle and spinning, it would compete with them for
         * a core, and a team would look several times dearer to wake) */
        if (i == n - 1 && n > 1)
            gxd_calibrate(ctx, &p->team, p->runner.team_max, &p->cal);
        p->w[i].pool = p;
        p->w[i].index = i;
        gxd_arenas_init(&p->w[i].arenas);
        if (pthread_create(&p->w[i].thread, NULL, s_worker_main, &p->w[i]) != 0)
            return gx_errf(err, errlen, GX_EINTERNAL, "cannot start worker %d", i);
        p->w[i].started = true;
        p->n = i + 1;
    }
    if (n == 1)
        gxd_calibrate(ctx, &p->team, p->runner.team_max, &p->cal);
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
    gxd_team_fini(&p->team);
    free(p->w);
    free(p);
    *pp = NULL;
}

int gxd_pool_size(const gxd_pool *p) { return p ? p->n : 0; }

bool gxd_pool_cancel(gxd_pool *p, const void *identity, size_t identity_len, uint64_t id)
{
    /* held first: taken from the queue and not yet a worker's current
     * (released only once it is), or into a running job's batch */
    if (gxd_queue_cancel_held(&p->ctx->queue, identity, identity_len, id))
        return true;
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

int gxd_pool_cancel_client(gxd_pool *p, const void *identity, size_t identity_len)
{
    /* held first, as gxd_pool_cancel */
    int n = gxd_queue_cancel_held_client(&p->ctx->queue, identity, identity_len);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n; i++) {
        gxd_job *j = p->w[i].current;
        /* the exchange counts a job a team's workers share once */
        if (j && j->identity_len == identity_len &&
            memcmp(j->identity, identity, identity_len) == 0)
            n += !atomic_exchange(&j->cancel, true);
    }
    pthread_mutex_unlock(&p->mu);
    return n;
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
    gxd_queue_cancel_held_client(&p->ctx->queue, NULL, 0); /* held first, as gxd_pool_cancel */
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n; i++)
        if (p->w[i].current)
            atomic_store(&p->w[i].current->cancel, true);
    pthread_mutex_unlock(&p->mu);
}
