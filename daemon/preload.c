/*
 * graphs.preload (see preload.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <gexec/io.h>
#include <gexec/status.h>

#include "daemon/ctx.h"
#include "daemon/job.h"
#include "daemon/preload.h"
#include "daemon/queue.h"

int gxd_preload_parse(const char *entry, char name[GXD_MAX_GRAPH_NAME], const char **path,
                      char *why, size_t whylen)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    const char *eq = strchr(entry, '=');
    name[0] = '\0';
    *path = entry;
    if (!eq)
        return GX_OK;
    size_t n = (size_t)(eq - entry);
    if (n == 0 || n >= GXD_MAX_GRAPH_NAME || strspn(entry, ok) != n)
        return gx_errf(why, whylen, GX_ECONFIG,
                       "'%s': expected PATH or NAME=PATH, NAME of 1 to %d letters, digits, '.', "
                       "'_' and '-'",
                       entry, GXD_MAX_GRAPH_NAME - 1);
    memcpy(name, entry, n);
    name[n] = '\0';
    *path = eq + 1;
    if (!**path)
        return gx_errf(why, whylen, GX_ECONFIG, "'%s': no path after '='", entry);
    return GX_OK;
}

static bool s_is_onnx(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".onnx") == 0;
}

/* A RUN job of mdl (a reference moves in) on zeros: every input its
 * declared dtype and shape, symbolic dims 1. NULL with err on failure. */
static gxd_job *s_warm_job(gxd_model *mdl, char *err, size_t errlen)
{
    const gx_graph *g = mdl->graph;
    gxd_job *j = gxd_job_new(GXD_JOB_RUN, "", 0, 0);
    if (!j || !(j->in = calloc(g->n_inputs + 1, sizeof *j->in))) {
        gxd_job_destroy(&j);
        gxd_model_release(&mdl);
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return NULL;
    }
    j->model = mdl;
    for (size_t i = 0; i < g->n_inputs; i++) {
        const gx_value_decl *d = &g->inputs[i];
        gxd_job_input *in = &j->in[i];
        zmq_msg_init(&in->frame);
        j->n_in = i + 1;
        if (d->kind != GX_KIND_TENSOR || d->optional || d->dtype == GX_DTYPE_COUNT || d->ndim < 0) {
            gx_errf(err, errlen, GX_ECONFIG,
                    "input '%s' is not a tensor of declared dtype and rank, so it cannot be "
                    "warmed on zeros",
                    d->name);
            gxd_job_destroy(&j);
            return NULL;
        }
        in->view = (gx_view){.dtype = d->dtype, .ndim = d->ndim, .numel = 1};
        for (int k = 0; k < d->ndim; k++) {
            in->view.shape[k] = d->shape[k] < 0 ? 1 : d->shape[k];
            in->view.numel *= in->view.shape[k];
        }
        size_t nbytes = (size_t)in->view.numel * gx_dtype_size(d->dtype);
        if (!(in->name = strdup(d->name)) || zmq_msg_init_size(&in->frame, nbytes) != 0) {
            gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            gxd_job_destroy(&j);
            return NULL;
        }
        memset(zmq_msg_data(&in->frame), 0, nbytes);
        in->view.data = zmq_msg_data(&in->frame);
        j->bytes += nbytes;
    }
    return j;
}

/* Wait for job j to come back from the pool (nothing else is queued while
 * gexecd starts) and take it off the done list. */
static void s_wait_done(gxd_ctx *ctx, gxd_job *j)
{
    for (;;) {
        pthread_mutex_lock(&ctx->done_mu);
        bool done = ctx->done_head == j;
        if (done)
            ctx->done_head = ctx->done_tail = NULL;
        pthread_mutex_unlock(&ctx->done_mu);
        if (done)
            return;
        struct pollfd p = {.fd = ctx->done_fd, .events = POLLIN};
        if (poll(&p, 1, -1) > 0) {
            uint64_t cnt;
            ssize_t n = read(ctx->done_fd, &cnt, sizeof cnt);
            (void)n;
        }
    }
}

/* Entry i: load, register (named, pinned), compile and warm. */
static int s_preload_one(gxd_ctx *ctx, const char *entry, char *err, size_t errlen)
{
    char name[GXD_MAX_GRAPH_NAME];
    const char *path;
    int rc = gxd_preload_parse(entry, name, &path, err, errlen);
    if (rc < 0)
        return rc;
    gx_graph *g = NULL;
    rc = s_is_onnx(path) ? gx_graph_load_onnx(path, &g, err, errlen)
                         : gx_graph_load_yaml(path, &g, err, errlen);
    if (rc < 0)
        return rc;
    gxd_model *mdl = NULL;
    int64_t t0 = gxd_now_us();
    if ((rc = gxd_models_add(&ctx->models, &g, &mdl, err, errlen)) < 0) {
        gx_graph_destroy(&g);
        return rc;
    }
    if (name[0]) {
        gxd_model *other = gxd_models_find_name(&ctx->models, name);
        if (other && other != mdl) {
            gxd_model_release(&other);
            gxd_model_release(&mdl);
            return gx_errf(err, errlen, GX_ECONFIG, "the name '%s' is given to another graph "
                           "earlier in the list", name);
        }
        gxd_model_release(&other);
        gxd_models_set_name(&ctx->models, mdl, name);
    }
    mdl->pinned = true;
    gx_graph_id id = mdl->id;
    gxd_job *j = s_warm_job(mdl, err, errlen);
    if (!j)
        return GX_ECONFIG;
    j->t_enqueue = gxd_now_us();
    if ((rc = gxd_queue_push(&ctx->queue, j, err, errlen)) < 0) {
        gxd_job_destroy(&j);
        return rc;
    }
    s_wait_done(ctx, j);
    rc = j->status;
    if (rc < 0)
        gx_errf(err, errlen, rc, "the warm-up run on zeros failed: %s: %s", gx_status_name(rc),
                j->message);
    else
        GXD_LOG(&ctx->log, GXD_LOG_INFO,
                "preloaded %s%s%s%s as graph %.12s: compiled and run once on zeros in %lld ms",
                path, name[0] ? " (name '" : "", name, name[0] ? "')" : "", id.hex,
                (long long)((gxd_now_us() - t0) / 1000));
    gxd_job_destroy(&j);
    return rc;
}

int gxd_preload_run(gxd_ctx *ctx, char *err, size_t errlen)
{
    for (int i = 0; i < ctx->cfg.n_graphs_preload; i++) {
        sd_notifyf(0, "STATUS=preloading graph %d of %d: %.200s", i + 1,
                   ctx->cfg.n_graphs_preload, ctx->cfg.graphs_preload[i]);
        char why[1024];
        int rc = s_preload_one(ctx, ctx->cfg.graphs_preload[i], why, sizeof why);
        if (rc < 0)
            return gx_errf(err, errlen, GX_ECONFIG, "graphs.preload[%d] (%s): %s", i,
                           ctx->cfg.graphs_preload[i], why);
    }
    return GX_OK;
}
