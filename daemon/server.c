/* The I/O thread. See server.h and docs/protocol.md. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon/auth.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/preload.h"
#include "daemon/reload.h"
#include "daemon/server.h"
#include "daemon/tune/tune.h"
#include "core/sockpath.h"
#include "core/proto.h"
#include "core/wire.h"

#define GXD_MAX_FRAMES 1026 /* header + up to 1024 input tensors (+1 to detect more) */
#define GXD_MAX_MSG_INPUTS (GXD_MAX_FRAMES - 2)

/* One received request. */
typedef struct s_req {
    zmq_msg_t identity;
    zmq_msg_t *hdr_msg; /* the header frame (its metadata: the peer) */
    const msgpack_object *hdr;
    uint64_t id;
    const char *type; /* reply type */
    zmq_msg_t *frames; /* tensor frames after the header */
    size_t nframes;
    char err[1024];
} s_req;

/* ---- replies ---- */

typedef struct s_reply {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} s_reply;

/* Begin a reply map; extra is the number of fields the caller adds. */
static void s_reply_begin(s_reply *r, const char *type, uint64_t id, int status,
                          const char *message, size_t extra)
{
    msgpack_sbuffer_init(&r->sb);
    msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
    msgpack_pack_map(&r->pk, 4 + (message ? 1 : 0) + extra);
    gx_mp_pack_str(&r->pk, GX_F(V));
    msgpack_pack_int(&r->pk, GX_PROTOCOL_VERSION);
    gx_mp_pack_str(&r->pk, GX_F(TYPE));
    gx_mp_pack_str(&r->pk, type);
    gx_mp_pack_str(&r->pk, GX_F(ID));
    msgpack_pack_uint64(&r->pk, id);
    gx_mp_pack_str(&r->pk, GX_F(STATUS));
    gx_mp_pack_str(&r->pk, gx_status_name(status));
    if (message) {
        gx_mp_pack_str(&r->pk, GX_F(MESSAGE));
        gx_mp_pack_str(&r->pk, message);
    }
}

/* The daemon's load as a PING reply carries it, "load": [jobs queued,
 * workers busy, workers]: what a client of several daemons weighs them by
 * (docs/cluster.md). */
static void s_pack_load(gxd_ctx *ctx, msgpack_packer *pk)
{
    gx_mp_pack_str(pk, GX_F(LOAD));
    msgpack_pack_array(pk, 3);
    msgpack_pack_uint64(pk, gxd_queue_len(&ctx->queue));
    msgpack_pack_int(pk, ctx->pool ? gxd_pool_busy(ctx->pool) : 0);
    msgpack_pack_int(pk, ctx->pool ? gxd_pool_size(ctx->pool) : 0);
}

static void s_free_buf(void *data, void *hint)
{
    free(data);
}

/* Send the reply (and the job's output tensors, whose buffers move to
 * ZeroMQ) to identity. A client that went away is not an error. */
static void s_reply_send(gxd_ctx *ctx, const void *identity, size_t identity_len, s_reply *r,
                         gxd_job *j)
{
    size_t nout = 0; /* frames: the outputs not written to shared memory */
    for (size_t i = 0; j && i < j->n_out; i++)
        nout += !j->out[i].in_shm;
    int rc = zmq_send(ctx->router, identity, identity_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (rc >= 0)
        rc = zmq_send(ctx->router, r->sb.data, r->sb.size, (nout ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
    for (size_t i = 0, sent = 0; rc >= 0 && sent < nout; i++) {
        zmq_msg_t m;
        gxd_job_output *o = &j->out[i];
        if (o->in_shm)
            continue;
        if (zmq_msg_init_data(&m, o->view.data, o->nbytes, s_free_buf, NULL) != 0) {
            rc = -1;
            break;
        }
        o->view.data = NULL; /* ZeroMQ frees it */
        rc = zmq_msg_send(&m, ctx->router, (++sent < nout ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
        if (rc < 0)
            zmq_msg_close(&m);
    }
    if (rc < 0)
        GXD_LOG(&ctx->log, GXD_LOG_DEBUG, "reply to a client dropped: %s", zmq_strerror(zmq_errno()));
    msgpack_sbuffer_destroy(&r->sb);
}

static void s_reply_error(gxd_ctx *ctx, s_req *rq, int status, const char *message)
{
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, status, message, 0);
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
}

/* The "estimates" entry of a RUN reply's "run" map: mode name -> the
 * policy's estimated µs (float64), for the modes it estimated (auto is a
 * choice, not a mode, and never has one). */
static void s_pack_estimates(msgpack_packer *pk, const double est_us[GX_MODE_COUNT])
{
    size_t n = 0;
    for (int m = GX_MODE_AUTO + 1; m < GX_MODE_COUNT; m++)
        n += est_us[m] >= 0 && isfinite(est_us[m]);
    gx_mp_pack_str(pk, GX_F(ESTIMATES));
    msgpack_pack_map(pk, n);
    for (int m = GX_MODE_AUTO + 1; m < GX_MODE_COUNT; m++)
        if (est_us[m] >= 0 && isfinite(est_us[m])) {
            gx_mp_pack_str(pk, gx_mode_name((gx_mode)m));
            msgpack_pack_double(pk, est_us[m]);
        }
}

/* An EXPLAIN's (TUNE's) or a COMPILE's reply: the graph's id, the compile
 * time (0 when the plan was cached or read from the artifact cache) and,
 * on success, EXPLAIN: the plan as JSON text; COMPILE: the artifact's name
 * in the cache and its bytes, one output frame, "artifact". */
static void s_reply_plan(gxd_ctx *ctx, gxd_job *j)
{
    s_reply r;
    const bool compile = j->kind == GXD_JOB_COMPILE;
    bool ok = j->status == GX_OK && (compile ? j->n_out == 1 : j->explain != NULL);
    gx_req kind = compile ? GX_REQ_COMPILE : j->tune ? GX_REQ_TUNE : GX_REQ_EXPLAIN;
    s_reply_begin(&r, gx_req_name(kind), j->id, j->status,
                  j->status == GX_OK ? NULL : j->message,
                  (j->model ? 1 : 0) + (ok ? (compile ? 3 : 2) : 0));
    if (j->model) {
        gx_mp_pack_str(&r.pk, GX_F(GRAPH_ID));
        gx_mp_pack_str(&r.pk, j->model->id.hex);
    }
    if (ok) {
        gx_mp_pack_str(&r.pk, GX_F(COMPILE_US));
        msgpack_pack_int64(&r.pk, j->compile_us);
    }
    if (ok && compile) {
        gx_mp_pack_str(&r.pk, GX_F(KEY));
        gx_mp_pack_str(&r.pk, j->key);
        gx_mp_pack_str(&r.pk, GX_F(OUTPUTS));
        msgpack_pack_array(&r.pk, 1);
        gx_wire_pack_tensor_desc(&r.pk, j->out[0].name, j->out[0].view.dtype,
                                 j->out[0].view.ndim, j->out[0].view.shape);
    } else if (ok) {
        gx_mp_pack_str(&r.pk, GX_F(PLAN));
        gx_mp_pack_str(&r.pk, j->explain);
    }
    s_reply_send(ctx, j->identity, j->identity_len, &r, ok && compile ? j : NULL);
}

/* The devices the daemon offers plans: the CPU, then ctx->part's. */
static const gx_backend *s_device(const gxd_ctx *ctx, size_t i)
{
    return i == 0 ? gx_backend_cpu() : ctx->part.backends[i - 1];
}

static size_t s_n_devices(const gxd_ctx *ctx)
{
    return 1 + ctx->part.n_backends;
}

/* Counts job j for each device its plan ran on (j->device: "cuda+cpu"). */
static void s_count_devices(gxd_ctx *ctx, const gxd_job *j)
{
    for (size_t i = 0; i < s_n_devices(ctx); i++) {
        const char *name = s_device(ctx, i)->name, *at = j->device;
        const size_t len = strlen(name);
        while ((at = strstr(at, name)) && ((at > j->device && at[-1] != '+') ||
                                           (at[len] && at[len] != '+')))
            at += len;
        if (at && (i == 0 || s_device(ctx, i) != gx_backend_cpu()))
            ctx->stats.device_jobs[i]++;
    }
}

/* A finished job whose regions were truncated while it ran (the SIGBUS
 * handler put zeros in their place, daemon/shm.h): failed, true. */
static bool s_shm_lost(gxd_job *j)
{
    const gxd_shm_region *lost = j->out_shm && gxd_shm_faulted(j->out_shm) ? j->out_shm : NULL;
    for (size_t i = 0; i < j->n_in && !lost; i++)
        if (j->in[i].shm && gxd_shm_faulted(j->in[i].shm))
            lost = j->in[i].shm;
    if (lost)
        gxd_job_fail(j, GX_EIO,
                     "region '%s' was truncated while the job ran: its inputs read as zeros "
                     "and its outputs were lost (unregister it and register it again)",
                     lost->name);
    return lost != NULL;
}

/* The final reply of a job; counts it in the statistics. */
static void s_reply_job(gxd_ctx *ctx, gxd_job *j)
{
    s_reply r;
    bool ok = j->status == GX_OK;
    /* the others: their own */
    const char *type = gx_req_name(j->kind == GXD_JOB_LOAD ? GX_REQ_LOAD : GX_REQ_RUN);
    gxd_stats *st = &ctx->stats;
    if (j->status == GX_ECANCELLED)
        st->cancelled++;
    else if (j->status == GX_ETIMEDOUT)
        st->expired++;
    if (j->compile_us)
        st->compile_count++;
    if (j->kind == GXD_JOB_LOAD) {
        s_reply_begin(&r, type, j->id, j->status, ok ? NULL : j->message, 1);
        gx_mp_pack_str(&r.pk, GX_F(GRAPH_ID));
        gx_mp_pack_str(&r.pk, j->model->id.hex);
        s_reply_send(ctx, j->identity, j->identity_len, &r, NULL);
        return;
    }
    if (j->kind == GXD_JOB_EXPLAIN || j->kind == GXD_JOB_COMPILE) {
        s_reply_plan(ctx, j);
        return;
    }
    if (ok && s_shm_lost(j)) {
        ok = false;
        ctx->shm.stats.refused++;
    }
    if (j->batched > 1) {
        st->batched_jobs++;
        st->batches += j->batch_lead;
    }
    if (ok) {
        st->runs_ok++;
        s_count_devices(ctx, j);
    } else {
        st->runs_failed++;
    }
    const int64_t queue_us = gxd_job_queue_us(j), compute_us = gxd_job_compute_us(j);
    st->queue_us_total += queue_us;
    st->compute_us_total += compute_us;
    st->device_us_total += j->device_us;
    if (ok && ctx->metrics)
        gxd_metrics_job(ctx->metrics, j->model ? j->model->id.hex : NULL, j->ran_mode, queue_us,
                        compute_us, j->t_end - j->t_enqueue);
    if (gxd_job_ring(j)) { /* its completion goes to the ring instead */
        if (!j->ring_posted)
            gxd_ring_post(j);
        return;
    }
    s_reply_begin(&r, type, j->id, j->status, ok ? NULL : j->message, ok ? 2 : 1);
    gx_mp_pack_str(&r.pk, GX_F(RUN));
    msgpack_pack_map(&r.pk, 11);
    gx_mp_pack_str(&r.pk, GX_F(MODE));
    gx_mp_pack_str(&r.pk, gx_mode_name(j->ran_mode));
    gx_mp_pack_str(&r.pk, GX_F(DEVICE));
    gx_mp_pack_str(&r.pk, gxd_job_device(j));
    gx_mp_pack_str(&r.pk, GX_F(WORKERS));
    msgpack_pack_int(&r.pk, j->workers);
    gx_mp_pack_str(&r.pk, GX_F(QUEUE_US));
    msgpack_pack_int64(&r.pk, queue_us);
    gx_mp_pack_str(&r.pk, GX_F(COMPUTE_US));
    msgpack_pack_int64(&r.pk, compute_us);
    gx_mp_pack_str(&r.pk, GX_F(COMPILE_US));
    msgpack_pack_int64(&r.pk, j->compile_us);
    gx_mp_pack_str(&r.pk, GX_F(DEVICE_US));
    msgpack_pack_int64(&r.pk, j->device_us);
    gx_mp_pack_str(&r.pk, GX_F(REASON));
    gx_mp_pack_str(&r.pk, j->reason);
    gx_mp_pack_str(&r.pk, GX_F(REPLICAS));
    msgpack_pack_int(&r.pk, j->replicas);
    gx_mp_pack_str(&r.pk, GX_F(BATCHED));
    msgpack_pack_int(&r.pk, j->batched);
    s_pack_estimates(&r.pk, j->est_us);
    if (ok) {
        gx_mp_pack_str(&r.pk, GX_F(OUTPUTS));
        msgpack_pack_array(&r.pk, j->n_out);
        for (size_t i = 0; i < j->n_out; i++) {
            const gxd_job_output *o = &j->out[i];
            gx_wire_shm_ref ref = {.offset = o->shm_offset, .bytes = o->nbytes};
            if (o->in_shm)
                snprintf(ref.region, sizeof ref.region, "%s", j->out_shm->name);
            if (o->value) /* a sequence or none: its frame is never in shared memory */
                gx_wire_pack_value_desc(&r.pk, o->name, o->value);
            else
                gx_wire_pack_tensor_desc_shm(&r.pk, o->name, o->view.dtype, o->view.ndim,
                                             o->view.shape, o->in_shm ? &ref : NULL);
        }
    }
    s_reply_send(ctx, j->identity, j->identity_len, &r, ok ? j : NULL);
}

/* Answer and free a list of jobs that will not run. */
static void s_fail_list(gxd_ctx *ctx, gxd_job *list, int status, const char *why)
{
    while (list) {
        gxd_job *j = list;
        list = j->next;
        j->t_end = gxd_now_us();
        gxd_job_fail(j, status, "%s", why);
        s_reply_job(ctx, j);
        gxd_job_destroy(&j);
    }
}

/* Ring jobs (answered already) a worker leaves for the I/O thread before
 * it wakes it: their statistics and freeing wait for its next turn (a
 * request, a signal, this many of them, or its tick, at least once a
 * second), so a client of the ring does not pay for a wake-up of the I/O
 * thread per job. */
#define S_RING_QUIET_MAX 64

/* The pool's done callback (gxd_pool_done_fn), on a worker thread: queue
 * the finished job for the I/O thread and wake it (a ring job: see
 * S_RING_QUIET_MAX). A ring job's completion is posted under done_mu, with
 * the job on the list: a request its client sends once it reads the
 * completion finds the job flushed (s_flush_done), its graph no longer
 * held (an eviction, an unload). */
static void s_job_done(void *arg, gxd_job *j)
{
    gxd_ctx *ctx = arg;
    bool wake = true;
    j->next = NULL;
    pthread_mutex_lock(&ctx->done_mu);
    if (gxd_job_ring(j)) { /* the client waits on the ring: answer it now, not after a hop */
        s_shm_lost(j);
        gxd_ring_post(j);
        j->ring_posted = true;
    }
    if (ctx->done_tail)
        ctx->done_tail->next = j;
    else
        ctx->done_head = j;
    ctx->done_tail = j;
    if (gxd_job_ring(j) && ++ctx->done_quiet < S_RING_QUIET_MAX)
        wake = false;
    else
        ctx->done_quiet = 0;
    pthread_mutex_unlock(&ctx->done_mu);
    if (!wake)
        return;
    uint64_t one = 1;
    ssize_t n = write(ctx->done_fd, &one, sizeof one);
    (void)n; /* an eventfd write only fails on counter overflow */
}

/* A ring's cancel of a running job (gxd_ring_hooks), on its thread. */
static bool s_ring_cancel_running(void *arg, const void *identity, size_t identity_len,
                                  uint64_t id)
{
    gxd_ctx *ctx = arg;
    return gxd_pool_cancel(ctx->pool, identity, identity_len, id);
}

/* Answers (or, for ring jobs, counts) and frees the finished jobs; before
 * every request the I/O thread reads, so a request sees every job a worker
 * finished before it came. */
static void s_flush_done(gxd_ctx *ctx)
{
    uint64_t cnt;
    ssize_t n = read(ctx->done_fd, &cnt, sizeof cnt); /* non-blocking */
    (void)n;
    pthread_mutex_lock(&ctx->done_mu);
    gxd_job *list = ctx->done_head;
    ctx->done_head = ctx->done_tail = NULL;
    ctx->done_quiet = 0;
    pthread_mutex_unlock(&ctx->done_mu);
    while (list) {
        gxd_job *j = list;
        list = j->next;
        s_reply_job(ctx, j);
        gxd_job_destroy(&j);
    }
}

/* ---- request handlers ---- */

static int s_enqueue(gxd_ctx *ctx, s_req *rq, gxd_job *j)
{
    j->t_enqueue = gxd_now_us();
    if (j->kind == GXD_JOB_RUN && j->model)
        j->team = atomic_load_explicit(&j->model->team, memory_order_relaxed);
    int rc = gxd_queue_push(&ctx->queue, j, rq->err, sizeof rq->err);
    if (rc == GX_EQUEUEFULL)
        ctx->stats.rejected_full++;
    return rc;
}

static bool s_peer_uid(s_req *rq, uid_t *uid);

static gxd_job *s_new_job(s_req *rq, gxd_job_kind kind)
{
    gxd_job *j = gxd_job_new(kind, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), rq->id);
    if (j) /* for limits.uid_jobs */
        j->has_uid = s_peer_uid(rq, &j->uid);
    return j;
}

static int s_decode_graph(gxd_ctx *ctx, s_req *rq, const msgpack_object *o, gxd_model **out)
{
    gx_wire_limits lim = {ctx->limits.max_nodes, ctx->limits.max_tensor_bytes};
    gx_graph *g = NULL;
    int rc = gx_wire_unpack_graph_nested(o, &lim, (int)ctx->cfg.limits_max_nesting, &g, rq->err,
                                         sizeof rq->err);
    if (rc < 0)
        return rc;
    /* Only subgraph inputs may leave their dtype undeclared (a graph input
     * of unknown rank takes any shape at RUN). */
    for (size_t i = 0; i < g->n_inputs; i++) {
        if (g->inputs[i].dtype == GX_DTYPE_COUNT) {
            rc = gx_errf(rq->err, sizeof rq->err, GX_EGRAPH,
                         "inputs[%zu]: graph input '%s' needs a dtype", i, g->inputs[i].name);
            gx_graph_destroy(&g);
            return rc;
        }
    }
    /* the client's own bounds first: nothing is evicted for a graph it may not hold */
    const void *ident = zmq_msg_data(&rq->identity);
    size_t ilen = zmq_msg_size(&rq->identity);
    gx_graph_id id;
    gx_wire_graph_id(g, &id);
    rc = gxd_clients_check(&ctx->clients, &ctx->models, ident, ilen, &id, gxd_graph_mem_bytes(g),
                           rq->err, sizeof rq->err);
    if (rc == GX_OK)
        rc = gxd_models_add_id(&ctx->models, &g, &id, out, rq->err, sizeof rq->err);
    if (rc == GX_OK && gxd_clients_hold(&ctx->clients, ident, ilen, *out) < 0) {
        gxd_model_release(out);
        rc = gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    }
    gx_graph_destroy(&g);
    return rc;
}

static int s_handle_ping(gxd_ctx *ctx, s_req *rq)
{
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    s_pack_load(ctx, &r.pk);
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

/* The optional graph name in field key (LOAD "name", RUN "graph_name"):
 * 1 to 63 of [A-Za-z0-9._-] into name, else a status. Absent: GX_OK, "". */
static int s_graph_name(s_req *rq, const char *key, char name[GXD_MAX_GRAPH_NAME])
{
    const msgpack_object *o = gx_mp_find(rq->hdr, key);
    name[0] = '\0';
    if (!o)
        return GX_OK;
    const char *ok = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 ||
        o->via.str.size >= GXD_MAX_GRAPH_NAME)
        return gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                       "%s: expected a name of 1 to %d characters", key, GXD_MAX_GRAPH_NAME - 1);
    memcpy(name, o->via.str.ptr, o->via.str.size);
    name[o->via.str.size] = '\0';
    if (strspn(name, ok) != o->via.str.size)
        return gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                       "%s: '%s' has characters other than letters, digits, '.', '_' and '-'", key,
                       name);
    return GX_OK;
}

static int s_handle_load(gxd_ctx *ctx, s_req *rq)
{
    gxd_model *mdl = NULL;
    const msgpack_object *go = gx_mp_find(rq->hdr, GX_F(GRAPH));
    if (!go)
        return gx_errf(rq->err, sizeof rq->err, GX_EPROTO, "LOAD: missing field 'graph'");
    char name[GXD_MAX_GRAPH_NAME] = "";
    int rc = s_graph_name(rq, GX_F(NAME), name);
    if (rc < 0 || (rc = s_decode_graph(ctx, rq, go, &mdl)) < 0)
        return rc;
    if (name[0])
        gxd_models_set_name(&ctx->models, mdl, name);
    ctx->stats.loads++;
    gxd_job *j = s_new_job(rq, GXD_JOB_LOAD);
    if (!j) {
        gxd_model_release(&mdl);
        return gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    }
    j->model = mdl;
    if ((rc = s_enqueue(ctx, rq, j)) < 0)
        gxd_job_destroy(&j);
    return rc;
}

/* The graph a RUN or EXPLAIN names: `graph_id` of a loaded graph or the
 * `graph` inline (loaded as by LOAD); sets j->model. */
static int s_decode_graph_ref(gxd_ctx *ctx, s_req *rq, gxd_job *j)
{
    char *err = rq->err;
    size_t errlen = sizeof rq->err;
    const msgpack_object *h = rq->hdr;
    const msgpack_object *gid = gx_mp_find(h, GX_F(GRAPH_ID)), *graph = gx_mp_find(h, GX_F(GRAPH));
    int rc = GX_OK;
    if (gx_mp_find(h, GX_F(GRAPH_NAME))) {
        char name[GXD_MAX_GRAPH_NAME];
        if (gid || graph)
            return gx_errf(err, errlen, GX_EPROTO,
                           "%s: give exactly one of 'graph_id', 'graph_name' and 'graph'", rq->type);
        if ((rc = s_graph_name(rq, GX_F(GRAPH_NAME), name)) < 0)
            return rc;
        if (!(j->model = gxd_models_find_name(&ctx->models, name)))
            return gx_errf(err, errlen, GX_ENOTFOUND,
                           "no graph is loaded under the name '%s' (LOAD it with that name)", name);
        return GX_OK;
    }
    if (!gid == !graph)
        return gx_errf(err, errlen, GX_EPROTO, "%s: give exactly one of 'graph_id' and 'graph'",
                       rq->type);
    if (!gid)
        return s_decode_graph(ctx, rq, graph, &j->model);
    char *hex = NULL;
    if ((rc = gx_mp_strdup(gid, "graph_id", &hex, err, errlen)) < 0)
        return rc;
    if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64) {
        free(hex);
        return gx_errf(err, errlen, GX_EPROTO, "graph_id: expected 64 lowercase hex digits");
    }
    j->model = gxd_models_find(&ctx->models, hex);
    if (!j->model)
        rc = gx_errf(err, errlen, GX_ENOTFOUND,
                     "graph %.64s is not loaded (send LOAD first; idle graphs are evicted beyond graphs.max)",
                     hex);
    free(hex);
    return rc;
}

/* The bytes ref names in one of the requesting client's regions: *p and
 * a new reference to the region in *region. GX_OK, or an error in rq->err. */
static int s_shm_slice(gxd_ctx *ctx, s_req *rq, const gx_wire_shm_ref *ref,
                       gxd_shm_region **region, void **p)
{
    *region = gxd_shm_find(&ctx->shm, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity),
                           ref->region);
    int rc = *region ? gxd_shm_slice(*region, ref->offset, ref->bytes, p, rq->err, sizeof rq->err)
                     : gx_errf(rq->err, sizeof rq->err, GX_ENOTFOUND,
                               "region '%s' is not registered by this client (SHM_REGISTER it "
                               "first; a region belongs to the connection that registered it)",
                               ref->region);
    if (rc < 0) {
        gxd_shm_region_release(region);
        ctx->shm.stats.refused++;
    }
    return rc;
}

/* Input in with the descriptor's "shm" so instead of a frame: read in
 * place when its dtype allows (gxd_shm_in_place), else copied now. */
static int s_shm_input(gxd_ctx *ctx, s_req *rq, gxd_job *j, gxd_job_input *in,
                       const msgpack_object *so, size_t nbytes, const char *what)
{
    char path[48];
    gx_wire_shm_ref ref;
    void *p;
    snprintf(path, sizeof path, "%s.shm", what);
    int rc = gx_wire_unpack_shm_ref(so, path, &ref, rq->err, sizeof rq->err);
    if (rc == GX_OK && ref.bytes != nbytes)
        rc = gx_errf(rq->err, sizeof rq->err, GX_EINVAL,
                     "input '%s': shm.bytes is %llu but dtype and shape need %zu", in->name,
                     (unsigned long long)ref.bytes, nbytes);
    if (rc == GX_OK)
        rc = s_shm_slice(ctx, rq, &ref, &in->shm, &p);
    if (rc < 0 || gxd_shm_in_place(in->view.dtype)) {
        in->view.data = p;
        return rc;
    }
    gxd_shm_region_release(&in->shm); /* a copy: the region is not needed any more */
    zmq_msg_close(&in->frame);
    if (zmq_msg_init_size(&in->frame, nbytes) != 0) {
        zmq_msg_init(&in->frame);
        return gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    }
    memcpy(zmq_msg_data(&in->frame), p, nbytes);
    in->view.data = zmq_msg_data(&in->frame);
    j->bytes += nbytes;
    return GX_OK;
}

/* The `inputs` descriptors of a RUN, EXPLAIN or COMPILE and their tensor
 * frames (kept as received) or shared-memory places (docs/shm.md) into
 * j->in; then, EXPLAIN and COMPILE, the `shapes` descriptors: inputs by
 * dtype and shape alone, without values. EXPLAIN and COMPILE may leave
 * both out. */
static int s_decode_inputs(gxd_ctx *ctx, s_req *rq, gxd_job *j)
{
    char *err = rq->err;
    size_t errlen = sizeof rq->err;
    int rc;
    const msgpack_object *ins = gx_mp_find(rq->hdr, GX_F(INPUTS)),
                         *shapes = gx_mp_find(rq->hdr, GX_F(SHAPES));
    const msgpack_object none = {.type = MSGPACK_OBJECT_ARRAY};
    if (!ins && j->kind != GXD_JOB_RUN)
        ins = &none;
    if (shapes && (j->kind == GXD_JOB_RUN || shapes->type != MSGPACK_OBJECT_ARRAY ||
                   shapes->via.array.size > GXD_MAX_MSG_INPUTS))
        return gx_errf(err, errlen, GX_EPROTO,
                       j->kind == GXD_JOB_RUN ? "RUN: 'shapes' is for EXPLAIN, TUNE and COMPILE "
                                                "(a RUN needs every input's values)"
                                              : "%s: 'shapes' must be an array of at most %d "
                                                "tensor descriptors",
                       rq->type, GXD_MAX_MSG_INPUTS);
    if (!ins || ins->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(err, errlen, GX_EPROTO,
                       "%s: 'inputs' must be an array of tensor descriptors", rq->type);
    const size_t n_ins = ins->via.array.size;
    size_t n_shm = 0, f = 0; /* inputs in shared memory; frames taken */
    for (size_t i = 0; i < n_ins; i++)
        n_shm += gx_mp_find(&ins->via.array.ptr[i], GX_F(SHM)) != NULL;
    if (n_ins - n_shm != rq->nframes)
        return gx_errf(err, errlen, GX_EPROTO,
                       "%s: %zu input descriptors (%zu of them in shared memory) but %zu tensor "
                       "frames follow the header", rq->type, n_ins, n_shm, rq->nframes);
    const size_t n_shapes = shapes ? shapes->via.array.size : 0;
    if (!(j->in = calloc(n_ins + n_shapes + 1, sizeof *j->in)))
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_ins + n_shapes; i++) {
        gxd_job_input *in = &j->in[i];
        const bool shape_only = i >= n_ins;
        const msgpack_object *desc = shape_only ? &shapes->via.array.ptr[i - n_ins]
                                                : &ins->via.array.ptr[i],
                             *so = shape_only ? NULL : gx_mp_find(desc, GX_F(SHM));
        size_t nbytes;
        char what[32];
        snprintf(what, sizeof what, "%s[%zu]", shape_only ? "shapes" : "inputs",
                 shape_only ? i - n_ins : i);
        zmq_msg_init(&in->frame);
        j->n_in = i + 1;
        if ((rc = gx_wire_unpack_tensor_desc(desc, what, ctx->limits.max_tensor_bytes, &in->name,
                                             &in->view.dtype, &in->view.ndim, in->view.shape,
                                             &nbytes, err, errlen)) < 0)
            return rc;
        in->view.numel = nbytes / gx_dtype_size(in->view.dtype);
        if (shape_only)
            continue; /* no data: the plan knows its shape, not its values */
        gx_kind kind;
        if ((rc = gx_wire_desc_kind(desc, what, &kind, err, errlen)) < 0)
            return rc;
        if (gx_wire_is_value(kind, in->view.dtype)) {
            /* a sequence, none or string tensor: decoded from its frame */
            char *name = NULL;
            if (so || f >= rq->nframes)
                return gx_errf(err, errlen, GX_EPROTO, "%s: a %s travels in a frame", what,
                               kind == GX_KIND_TENSOR ? "string tensor" : gx_kind_name(kind));
            if ((rc = gx_wire_unpack_value(desc, what, ctx->limits.max_tensor_bytes,
                                           zmq_msg_data(&rq->frames[f]),
                                           zmq_msg_size(&rq->frames[f]), &name, &in->value, err,
                                           errlen)) < 0)
                return rc;
            free(name);
            j->bytes += zmq_msg_size(&rq->frames[f++]);
            in->view = (gx_view){.dtype = in->value->dtype, .kind = kind,
                                 .data = kind == GX_KIND_SEQUENCE ? in->value : NULL};
            if (kind == GX_KIND_TENSOR) { /* strings: the value's handles */
                in->view.ndim = in->value->ndim;
                memcpy(in->view.shape, in->value->shape, sizeof in->view.shape);
                in->view.numel = in->value->numel;
                in->view.data = in->value->data;
                /* the queue counts what they take decoded: handles and records */
                const gx_strrec *const *h = in->value->data;
                j->bytes += in->value->nbytes;
                for (int64_t e = 0; e < in->value->numel; e++)
                    j->bytes += h[e] ? gx_strrec_size(gx_str_len(h[e])) : 0;
            }
            continue;
        }
        if (so) {
            if ((rc = s_shm_input(ctx, rq, j, in, so, nbytes, what)) < 0)
                return rc;
            continue;
        }
        if (zmq_msg_size(&rq->frames[f]) != nbytes)
            return gx_errf(err, errlen, GX_EPROTO,
                           "input '%s': its frame has %zu bytes but dtype and shape need %zu",
                           in->name, zmq_msg_size(&rq->frames[f]), nbytes);
        zmq_msg_move(&in->frame, &rq->frames[f++]); /* the bytes stay where ZeroMQ put them */
        in->view.data = zmq_msg_data(&in->frame);
        j->bytes += nbytes;
    }
    return GX_OK;
}

/*
 * The uid of the client that sent rq, when it came over ipc: libzmq gives
 * an ipc peer's Peer-Address as "localhost:<uid>:<gid>:<pid>", read with
 * SO_PEERCRED when the connection was accepted (so the kernel vouches for
 * it, not the client). false for tcp peers, who are not identified.
 */
static bool s_peer_uid(s_req *rq, uid_t *uid)
{
    /* the header frame's: libzmq leaves the routing id frame without
     * metadata when it was prefetched (polled) */
    const char *pa = rq->hdr_msg ? zmq_msg_gets(rq->hdr_msg, "Peer-Address") : NULL;
    static const char host[] = "localhost:";
    if (!pa || strncmp(pa, host, sizeof host - 1) != 0)
        return false;
    const char *p = pa + sizeof host - 1;
    char *end;
    if (*p < '0' || *p > '9')
        return false;
    errno = 0;
    unsigned long u = strtoul(p, &end, 10);
    if (errno != 0 || *end != ':' || u >= (unsigned long)(uid_t)-1)
        return false;
    *uid = (uid_t)u;
    return true;
}

/* Is the client one of limits.priority_users (by the uid the kernel gives
 * for its ipc connection)? If not, why_not says why, for the message. */
static bool s_priority_elevated(gxd_ctx *ctx, s_req *rq, char *why_not, size_t len)
{
    uid_t uid;
    if (!s_peer_uid(rq, &uid)) {
        snprintf(why_not, len, ", and this client is not identified (tcp)");
        return false;
    }
    for (int i = 0; i < ctx->n_priority_uids; i++)
        if (ctx->priority_uids[i] == uid)
            return true;
    snprintf(why_not, len, ", and uid %lu is not one of them", (unsigned long)uid);
    return false;
}

static int s_decode_run(gxd_ctx *ctx, s_req *rq, gxd_job *j)
{
    char *err = rq->err;
    size_t errlen = sizeof rq->err;
    const msgpack_object *h = rq->hdr, *o;
    int rc;
    if ((rc = s_decode_graph_ref(ctx, rq, j)) < 0 || (rc = s_decode_inputs(ctx, rq, j)) < 0)
        return rc;

    if ((o = gx_mp_find(h, GX_F(OUTPUTS))) && !(o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 0)) {
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > GXD_MAX_MSG_INPUTS)
            return gx_errf(err, errlen, GX_EPROTO, "RUN: 'outputs' must be an array of names");
        if (!(j->want = calloc(o->via.array.size, sizeof *j->want)))
            return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < o->via.array.size; i++, j->n_want++)
            if ((rc = gx_mp_strdup(&o->via.array.ptr[i], "outputs[]", &j->want[i], err, errlen)) < 0)
                return rc;
    }
    if ((o = gx_mp_find(h, GX_F(OUTPUT_SHM)))) { /* where outputs go, as far as they fit */
        gx_wire_shm_ref ref;
        void *p;
        if ((rc = gx_wire_unpack_shm_ref(o, "output_shm", &ref, err, errlen)) < 0 ||
            (rc = s_shm_slice(ctx, rq, &ref, &j->out_shm, &p)) < 0)
            return rc;
        j->out_shm_offset = ref.offset;
        j->out_shm_bytes = ref.bytes;
    }
    /* the types here; the values by the one rule the ring follows too */
    int64_t prio = 0, deadline = 0;
    if ((o = gx_mp_find(h, GX_F(PRIORITY))) &&
        (rc = gx_mp_int(o, "priority", INT64_MIN, INT64_MAX, &prio, err, errlen)) < 0)
        return rc;
    if ((o = gx_mp_find(h, GX_F(DEADLINE_MS))) &&
        (rc = gx_mp_int(o, "deadline_ms", INT64_MIN, INT64_MAX, &deadline, err, errlen)) < 0)
        return rc;
    char why_not[96] = "";
    const int ceiling = ctx->cfg.limits_max_client_priority;
    const bool elevated = prio <= ceiling || s_priority_elevated(ctx, rq, why_not, sizeof why_not);
    if ((rc = gxd_job_set_urgency(j, "RUN", prio, deadline, ceiling, elevated, why_not, err,
                                  errlen)) < 0)
        return rc;
    j->mode = GX_MODE_AUTO;
    if ((o = gx_mp_find(h, GX_F(MODE)))) {
        char *m = NULL;
        if ((rc = gx_mp_strdup(o, "mode", &m, err, errlen)) < 0)
            return rc;
        rc = gx_mode_parse(m, &j->mode);
        if (rc < 0) {
            char list[160] = "";
            for (int k = 0; k < GX_MODE_COUNT; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                         gx_mode_name((gx_mode)k));
            rc = gx_errf(err, errlen, GX_EINVAL, "RUN: unknown mode '%.64s' (one of: %s)", m, list);
        }
        free(m);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

static int s_handle_run(gxd_ctx *ctx, s_req *rq)
{
    gxd_job *j = s_new_job(rq, GXD_JOB_RUN);
    if (!j)
        return gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    int rc = s_decode_run(ctx, rq, j);
    if (rc == GX_OK)
        rc = s_enqueue(ctx, rq, j);
    if (rc < 0) {
        if (rc != GX_EQUEUEFULL)
            ctx->stats.runs_failed++;
        gxd_job_destroy(&j);
    }
    return rc;
}

/* EXPLAIN, TUNE and COMPILE (kind): the graph and inputs a plan is made
 * for, queued. TUNE is EXPLAIN, and the plan's signatures are queued for
 * exploration now, ahead of the others (docs/tune.md). */
static int s_handle_plan(gxd_ctx *ctx, s_req *rq, gxd_job_kind kind, bool tune)
{
    if (tune && !ctx->tune)
        return gx_errf(rq->err, sizeof rq->err, GX_EUNSUPPORTED,
                       "the best-implementation registry is off (tune.mode: off)");
    gxd_job *j = s_new_job(rq, kind);
    if (!j)
        return gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    j->tune = tune;
    int rc = s_decode_graph_ref(ctx, rq, j);
    if (rc == GX_OK)
        rc = s_decode_inputs(ctx, rq, j);
    if (rc == GX_OK)
        rc = s_enqueue(ctx, rq, j);
    if (rc < 0)
        gxd_job_destroy(&j);
    return rc;
}

static int s_handle_explain(gxd_ctx *ctx, s_req *rq)
{
    return s_handle_plan(ctx, rq, GXD_JOB_EXPLAIN, false);
}

static int s_handle_tune(gxd_ctx *ctx, s_req *rq)
{
    return s_handle_plan(ctx, rq, GXD_JOB_EXPLAIN, true);
}

/* COMPILE: the plan EXPLAIN would describe, answered as its artifact file
 * (docs/artifact.md); nothing runs. */
static int s_handle_compile(gxd_ctx *ctx, s_req *rq)
{
    return s_handle_plan(ctx, rq, GXD_JOB_COMPILE, false);
}

static int s_handle_cancel(gxd_ctx *ctx, s_req *rq)
{
    int64_t target;
    int rc = gx_mp_int(gx_mp_find(rq->hdr, GX_F(TARGET)), "CANCEL: target", 0, INT64_MAX, &target,
                       rq->err, sizeof rq->err);
    if (rc < 0)
        return rc;
    const void *ident = zmq_msg_data(&rq->identity);
    size_t ilen = zmq_msg_size(&rq->identity);
    const char *what;
    gxd_job *j = gxd_queue_remove(&ctx->queue, ident, ilen, (uint64_t)target);
    if (j) {
        j->next = NULL;
        s_fail_list(ctx, j, GX_ECANCELLED, "cancelled by the client while queued");
        what = "cancelled while queued";
    } else if (gxd_pool_cancel(ctx->pool, ident, ilen, (uint64_t)target)) {
        what = "cancellation requested; the job stops at its next step";
    } else {
        return gx_errf(rq->err, sizeof rq->err, GX_ENOTFOUND,
                       "no queued or running job %lld from this client (already answered?)",
                       (long long)target);
    }
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, what, 0);
    s_reply_send(ctx, ident, ilen, &r, NULL);
    return GX_OK;
}

static void s_pack_kv(msgpack_packer *pk, const char *k, int64_t v)
{
    gx_mp_pack_str(pk, k);
    msgpack_pack_int64(pk, v);
}

/* "tune": the registry's counters (docs/tune.md), an empty map when off. */
static void s_pack_tune_stats(gxd_ctx *ctx, msgpack_packer *pk)
{
    gx_mp_pack_str(pk, "tune");
    if (!ctx->tune) {
        msgpack_pack_map(pk, 0);
        return;
    }
    gxd_tune_stats ts;
    gxd_tune_get_stats(ctx->tune, &ts);
    msgpack_pack_map(pk, 25);
    gx_mp_pack_str(pk, "mode");
    gx_mp_pack_str(pk, gxd_tune_mode_name(gxd_tune_get_mode(ctx->tune)));
    s_pack_kv(pk, "lookups", ts.lookups);
    s_pack_kv(pk, "hits_memory", ts.hits[GXD_TUNE_MEMORY]);
    s_pack_kv(pk, "hits_local", ts.hits[GXD_TUNE_LOCAL]);
    s_pack_kv(pk, "hits_central", ts.hits[GXD_TUNE_CENTRAL]);
    s_pack_kv(pk, "upstream_up", ts.upstream_up);
    s_pack_kv(pk, "upstream_errors", ts.upstream_errors);
    s_pack_kv(pk, "upstream_written", ts.upstream_written);
    s_pack_kv(pk, "upstream_queued", ts.upstream_queued);
    s_pack_kv(pk, "upstream_dropped", ts.upstream_dropped);
    s_pack_kv(pk, "upstream_trimmed", ts.upstream_trimmed);
    s_pack_kv(pk, "misses", ts.misses);
    s_pack_kv(pk, "queued", ts.queued);
    s_pack_kv(pk, "pending", ts.pending);
    s_pack_kv(pk, "explored", ts.explored);
    s_pack_kv(pk, "rejected", ts.rejected);
    s_pack_kv(pk, "explore_us", ts.explore_us);
    s_pack_kv(pk, "stored", ts.stored);
    s_pack_kv(pk, "cached", ts.cached);
    s_pack_kv(pk, "prefetched", ts.prefetched);
    s_pack_kv(pk, "stale", ts.stale);
    s_pack_kv(pk, "additive", ts.additive);
    s_pack_kv(pk, "db_errors", ts.db_errors);
    gx_mp_pack_str(pk, "wins");
    msgpack_pack_map(pk, (uint32_t)ts.n_wins);
    for (int i = 0; i < ts.n_wins; i++)
        s_pack_kv(pk, ts.wins[i].source, ts.wins[i].n);
    gx_mp_pack_str(pk, "top");
    msgpack_pack_array(pk, (uint32_t)ts.n_top);
    for (int i = 0; i < ts.n_top; i++) {
        msgpack_pack_map(pk, 4);
        gx_mp_pack_str(pk, "signature");
        gx_mp_pack_str(pk, ts.top[i].sig);
        gx_mp_pack_str(pk, "impl");
        gx_mp_pack_str(pk, ts.top[i].impl);
        s_pack_kv(pk, "version", ts.top[i].version);
        s_pack_kv(pk, "reuse", ts.top[i].reuse);
    }
}

size_t gxd_device_stats(const gxd_ctx *ctx, gxd_device_stat *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s_n_devices(ctx) && n < max; i++) {
        const gx_backend *b = s_device(ctx, i);
        if (i && b == gx_backend_cpu())
            continue; /* partition.prefer may name the CPU too */
        out[n++] = (gxd_device_stat){
            .name = b->name,
            .jobs = ctx->stats.device_jobs[i],
            /* host memory: what limits.max_memory_bytes counts (graphs,
             * plans, one arena each); a device's own: what its alloc gave */
            .in_use = b == gx_backend_cpu() ? atomic_load(&ctx->models.bytes)
                      : b->in_use           ? (int64_t)b->in_use(b)
                                            : -1,
            .free = b->capacity ? (int64_t)b->capacity(b) : -1,
        };
    }
    return n;
}

/* "devices": per device the daemon offers, the jobs that ran steps on it,
 * the bytes it holds for plans and jobs and, where the device says, the
 * bytes it can still give. */
static void s_pack_device_stats(gxd_ctx *ctx, msgpack_packer *pk)
{
    gxd_device_stat ds[GXD_MAX_DEVICES + 1];
    size_t n = gxd_device_stats(ctx, ds, sizeof ds / sizeof ds[0]);
    gx_mp_pack_str(pk, "devices");
    msgpack_pack_map(pk, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        gx_mp_pack_str(pk, ds[i].name);
        msgpack_pack_map(pk, 1 + (ds[i].in_use >= 0) + (ds[i].free >= 0));
        s_pack_kv(pk, "jobs", (int64_t)ds[i].jobs);
        if (ds[i].in_use >= 0)
            s_pack_kv(pk, "memory_bytes", ds[i].in_use);
        if (ds[i].free >= 0)
            s_pack_kv(pk, "free_bytes", ds[i].free);
    }
}

/* "shm": clients' shared-memory regions (docs/shm.md). */
static void s_pack_shm_stats(gxd_ctx *ctx, msgpack_packer *pk)
{
    const gxd_shm_stats *ss = &ctx->shm.stats;
    gx_mp_pack_str(pk, "shm");
    msgpack_pack_map(pk, 7);
    s_pack_kv(pk, "regions", (int64_t)atomic_load(&ctx->shm.mapped));
    s_pack_kv(pk, "bytes", (int64_t)atomic_load(&ctx->shm.mapped_bytes));
    s_pack_kv(pk, "registered", (int64_t)ss->registered);
    s_pack_kv(pk, "unregistered", (int64_t)ss->unregistered);
    s_pack_kv(pk, "dropped_disconnected", (int64_t)ss->dropped);
    s_pack_kv(pk, "refused", (int64_t)ss->refused);
    s_pack_kv(pk, "faults", (int64_t)gxd_shm_faults());
}

/* "ring": the shared-memory rings' counters (daemon/ring.h). */
static void s_pack_ring_stats(gxd_ctx *ctx, msgpack_packer *pk)
{
    gxd_ring_stats *rs = &ctx->rings.stats;
    gx_mp_pack_str(pk, "ring");
    msgpack_pack_map(pk, 8);
    s_pack_kv(pk, "open", (int64_t)gxd_rings_count(&ctx->rings));
    s_pack_kv(pk, "opened", (int64_t)atomic_load(&rs->opened));
    s_pack_kv(pk, "closed", (int64_t)atomic_load(&rs->closed));
    s_pack_kv(pk, "hostile", (int64_t)atomic_load(&rs->hostile));
    s_pack_kv(pk, "jobs", (int64_t)atomic_load(&rs->jobs));
    s_pack_kv(pk, "refused", (int64_t)atomic_load(&rs->refused));
    s_pack_kv(pk, "dropped", (int64_t)atomic_load(&rs->dropped));
    s_pack_kv(pk, "cancels", (int64_t)atomic_load(&rs->cancels));
}

/* "artifacts": the artifact cache's counters (docs/artifact.md), an empty
 * map when it is off. */
static void s_pack_artifact_stats(gxd_ctx *ctx, msgpack_packer *pk)
{
    gx_mp_pack_str(pk, "artifacts");
    if (!ctx->models.artifacts) {
        msgpack_pack_map(pk, 0);
        return;
    }
    gxd_artifacts_stats as;
    gxd_artifacts_get_stats(ctx->models.artifacts, &as);
    msgpack_pack_map(pk, 15);
    gx_mp_pack_str(pk, "dir");
    gx_mp_pack_str(pk, gxd_artifacts_dir(ctx->models.artifacts));
    s_pack_kv(pk, "hits", as.hits);
    s_pack_kv(pk, "misses", as.misses);
    s_pack_kv(pk, "rejected", as.rejected);
    s_pack_kv(pk, "writes", as.writes);
    s_pack_kv(pk, "consts_writes", as.consts_writes);
    s_pack_kv(pk, "consts_reused", as.consts_reused);
    s_pack_kv(pk, "evicted", as.evicted);
    s_pack_kv(pk, "queued", as.queued);
    s_pack_kv(pk, "dropped", as.dropped);
    s_pack_kv(pk, "write_errors", as.write_errors);
    s_pack_kv(pk, "files", as.files);
    s_pack_kv(pk, "bytes", as.bytes);
    s_pack_kv(pk, "consts_files", as.consts_files);
    s_pack_kv(pk, "consts_bytes", as.consts_bytes);
}

/* STATS with "format": "prometheus": the exposition text (daemon/metrics.h)
 * in "text", the same the HTTP endpoint serves. */
static int s_handle_stats_text(gxd_ctx *ctx, s_req *rq)
{
    const msgpack_object *fmt = gx_mp_find(rq->hdr, GX_F(FORMAT));
    if (!gx_mp_streq(fmt, "prometheus"))
        return gx_errf(rq->err, sizeof rq->err, GX_EREQUEST,
                       "STATS: format must be \"prometheus\" (or left out for the stats map)");
    char *text = gxd_metrics_prometheus(ctx);
    if (!text)
        return gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    gx_mp_pack_str(&r.pk, GX_F(TEXT));
    gx_mp_pack_str(&r.pk, text);
    free(text);
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

static int s_handle_stats(gxd_ctx *ctx, s_req *rq)
{
    if (gx_mp_find(rq->hdr, GX_F(FORMAT)))
        return s_handle_stats_text(ctx, rq);
    const gxd_stats *st = &ctx->stats;
    const char *url = gxd_metrics_url(ctx->metrics);
    char topo[256];
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    gx_mp_pack_str(&r.pk, GX_F(STATS));
    msgpack_pack_map(&r.pk, 30 + (ctx->metrics ? 1 : 0) + (url ? 1 : 0));
    gx_mp_pack_str(&r.pk, "version");
    gx_mp_pack_str(&r.pk, PACKAGE_VERSION);
    gx_mp_pack_str(&r.pk, "topology");
    gx_mp_pack_str(&r.pk, gxd_topo_describe(ctx->topo, topo, sizeof topo));
    s_pack_kv(&r.pk, "uptime_ms", (gxd_now_us() - ctx->started_us) / 1000);
    s_pack_kv(&r.pk, "workers", gxd_pool_size(ctx->pool));
    s_pack_kv(&r.pk, "workers_busy", gxd_pool_busy(ctx->pool));
    s_pack_kv(&r.pk, "queue_length", (int64_t)gxd_queue_len(&ctx->queue));
    s_pack_kv(&r.pk, "graphs_loaded", (int64_t)ctx->models.n);
    s_pack_kv(&r.pk, "requests", (int64_t)st->requests);
    s_pack_kv(&r.pk, "protocol_errors", (int64_t)st->protocol_errors);
    s_pack_kv(&r.pk, "loads", (int64_t)st->loads);
    s_pack_kv(&r.pk, "runs_ok", (int64_t)st->runs_ok);
    s_pack_kv(&r.pk, "runs_failed", (int64_t)st->runs_failed);
    s_pack_kv(&r.pk, "cancelled", (int64_t)st->cancelled);
    s_pack_kv(&r.pk, "expired", (int64_t)st->expired);
    s_pack_kv(&r.pk, "rejected_queue_full", (int64_t)st->rejected_full);
    s_pack_kv(&r.pk, "disconnected_dropped", (int64_t)st->gone_dropped);
    s_pack_kv(&r.pk, "disconnected_cancelled", (int64_t)st->gone_cancelled);
    s_pack_kv(&r.pk, "batches", (int64_t)st->batches);
    s_pack_kv(&r.pk, "batched_jobs", (int64_t)st->batched_jobs);
    s_pack_kv(&r.pk, "plans_compiled", (int64_t)st->compile_count);
    s_pack_kv(&r.pk, "queue_us_total", st->queue_us_total);
    s_pack_kv(&r.pk, "compute_us_total", st->compute_us_total);
    s_pack_kv(&r.pk, "device_us_total", st->device_us_total);
    s_pack_kv(&r.pk, "config_reloads", (int64_t)st->reloads);
    s_pack_kv(&r.pk, "config_reload_failures", (int64_t)st->reload_failures);
    s_pack_tune_stats(ctx, &r.pk);
    s_pack_artifact_stats(ctx, &r.pk);
    s_pack_device_stats(ctx, &r.pk);
    s_pack_shm_stats(ctx, &r.pk);
    s_pack_ring_stats(ctx, &r.pk);
    if (ctx->metrics) {
        gx_mp_pack_str(&r.pk, "latency");
        gxd_metrics_pack(ctx->metrics, &r.pk);
    }
    if (url) {
        gx_mp_pack_str(&r.pk, "metrics_url");
        gx_mp_pack_str(&r.pk, url);
    }
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

/* LIST: every loaded graph with its name, inputs, outputs, plans, the
 * arena bytes of one job of each plan, and the jobs holding it. */
static int s_handle_list(gxd_ctx *ctx, s_req *rq)
{
    s_reply r;
    int64_t now = gxd_now_us();
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    gx_mp_pack_str(&r.pk, GX_F(GRAPHS));
    msgpack_pack_array(&r.pk, ctx->models.n);
    for (gxd_model *m = ctx->models.head; m; m = m->next) {
        const gx_graph *g = m->graph;
        size_t plans, arena = 0;
        pthread_mutex_lock(&m->mu); /* workers add plans */
        plans = m->n_plans;
        for (size_t i = 0; i < m->n_plans; i++)
            arena += m->plans[i]->arena_bytes;
        pthread_mutex_unlock(&m->mu);
        msgpack_pack_map(&r.pk, 10);
        gx_mp_pack_str(&r.pk, GX_F(GRAPH_ID));
        gx_mp_pack_str(&r.pk, m->id.hex);
        gx_mp_pack_str(&r.pk, GX_F(NAME));
        gx_mp_pack_str(&r.pk, m->name);
        gx_mp_pack_str(&r.pk, GX_F(INPUTS));
        msgpack_pack_array(&r.pk, g->n_inputs);
        for (size_t i = 0; i < g->n_inputs; i++)
            gx_mp_pack_str(&r.pk, g->inputs[i].name);
        gx_mp_pack_str(&r.pk, GX_F(OUTPUTS));
        msgpack_pack_array(&r.pk, g->n_outputs);
        for (size_t i = 0; i < g->n_outputs; i++)
            gx_mp_pack_str(&r.pk, g->outputs[i].name);
        s_pack_kv(&r.pk, GX_F(PLANS), (int64_t)plans);
        s_pack_kv(&r.pk, GX_F(ARENA_BYTES), (int64_t)arena);
        /* the registry holds one reference; jobs queued or running the rest
         * (and the re-planner while it checks the graph) */
        s_pack_kv(&r.pk, GX_F(JOBS), (int64_t)atomic_load(&m->refs) - 1);
        s_pack_kv(&r.pk, GX_F(IDLE_MS), (now - m->last_used) / 1000);
        /* ready: a plan is compiled, so a RUN of its shapes starts at once */
        gx_mp_pack_str(&r.pk, GX_F(READY));
        plans ? msgpack_pack_true(&r.pk) : msgpack_pack_false(&r.pk);
        gx_mp_pack_str(&r.pk, GX_F(PRELOADED));
        m->pinned ? msgpack_pack_true(&r.pk) : msgpack_pack_false(&r.pk);
    }
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

/* UNLOAD graph_id | graph_name: the graph leaves the registry now; its plans
 * and arenas are freed once the jobs holding it are done (they finish). */
static int s_handle_unload(gxd_ctx *ctx, s_req *rq)
{
    if (gx_mp_find(rq->hdr, GX_F(GRAPH)))
        return gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                       "UNLOAD: give 'graph_id' or 'graph_name', not a graph");
    gxd_job probe = {0};
    int rc = s_decode_graph_ref(ctx, rq, &probe);
    if (rc < 0)
        return rc;
    gxd_model *m = probe.model;
    int64_t jobs = (int64_t)atomic_load(&m->refs) - 2; /* less the registry's and ours */
    char hex[sizeof m->id.hex];
    memcpy(hex, m->id.hex, sizeof hex);
    rc = gxd_models_unload(&ctx->models, m);
    gxd_model_release(&m);
    if (rc < 0)
        return gx_errf(rq->err, sizeof rq->err, rc, "graph %s is not loaded", hex);
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "graph %.12s unloaded (%lld job%s still hold it)", hex,
            (long long)jobs, jobs == 1 ? "" : "s");
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 2);
    gx_mp_pack_str(&r.pk, GX_F(GRAPH_ID));
    gx_mp_pack_str(&r.pk, hex);
    s_pack_kv(&r.pk, GX_F(JOBS), jobs);
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

/* ---- shared memory (docs/shm.md) ---- */

/* SHM_REGISTER region, bytes: map the client's /dev/shm/<region>; local
 * (ipc) clients only, whose uid must own the file. */
static int s_handle_shm_register(gxd_ctx *ctx, s_req *rq)
{
    uid_t uid;
    int64_t bytes;
    char *name = NULL;
    if (!s_peer_uid(rq, &uid)) {
        ctx->shm.stats.refused++;
        return gx_errf(rq->err, sizeof rq->err, GX_EPERM,
                       "SHM_REGISTER: shared memory is for local clients over ipc, whose user "
                       "the kernel vouches for; this client is not identified (tcp)");
    }
    int rc = gx_mp_strdup(gx_mp_find(rq->hdr, GX_F(REGION)), "SHM_REGISTER: region", &name, rq->err,
                          sizeof rq->err);
    if (rc == GX_OK)
        rc = gx_mp_int(gx_mp_find(rq->hdr, GX_F(BYTES)), "SHM_REGISTER: bytes", 1, INT64_MAX, &bytes,
                       rq->err, sizeof rq->err);
    if (rc == GX_OK)
        rc = gxd_shm_register(&ctx->shm, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity),
                              uid, name, (size_t)bytes, rq->err, sizeof rq->err);
    if (rc == GX_OK) {
        GXD_LOG(&ctx->log, GXD_LOG_DEBUG, "region %s (%lld bytes) registered by uid %lu", name,
                (long long)bytes, (unsigned long)uid);
        s_reply r;
        s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 2);
        gx_mp_pack_str(&r.pk, GX_F(REGION));
        gx_mp_pack_str(&r.pk, name);
        s_pack_kv(&r.pk, GX_F(BYTES), bytes);
        s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    }
    free(name);
    return rc;
}

/* SHM_UNREGISTER [region]: that region of the client, or all of them;
 * jobs still using one keep it mapped until they finish. */
static int s_handle_shm_unregister(gxd_ctx *ctx, s_req *rq)
{
    char *name = NULL;
    size_t n = 0;
    const msgpack_object *o = gx_mp_find(rq->hdr, GX_F(REGION));
    int rc = o ? gx_mp_strdup(o, "SHM_UNREGISTER: region", &name, rq->err, sizeof rq->err)
               : GX_OK;
    if (rc == GX_OK) /* a ring in a region goes with it */
        gxd_ring_close(&ctx->rings, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity),
                       name);
    if (rc == GX_OK &&
        (rc = gxd_shm_unregister(&ctx->shm, zmq_msg_data(&rq->identity),
                                 zmq_msg_size(&rq->identity), name, &n)) < 0)
        gx_errf(rq->err, sizeof rq->err, rc, "SHM_UNREGISTER: this client has no region '%s'",
                name);
    free(name);
    if (rc < 0)
        return rc;
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    s_pack_kv(&r.pk, GX_F(UNREGISTERED), (int64_t)n);
    s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    return GX_OK;
}

static void s_pack_region(void *arg, const gxd_shm_region *reg)
{
    msgpack_packer *pk = arg;
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, GX_F(REGION));
    gx_mp_pack_str(pk, reg->name);
    s_pack_kv(pk, GX_F(BYTES), (int64_t)reg->bytes);
    s_pack_kv(pk, GX_F(JOBS), (int64_t)atomic_load(&reg->refs) - 1); /* less the table's */
}

/* SHM_LIST: the client's regions, each with its bytes and the jobs using it. */
static int s_handle_shm_list(gxd_ctx *ctx, s_req *rq)
{
    const void *id = zmq_msg_data(&rq->identity);
    size_t idlen = zmq_msg_size(&rq->identity);
    s_reply r;
    s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
    gx_mp_pack_str(&r.pk, GX_F(REGIONS));
    msgpack_pack_array(&r.pk, (uint32_t)gxd_shm_count(&ctx->shm, id, idlen));
    gxd_shm_each(&ctx->shm, id, idlen, s_pack_region, &r.pk);
    s_reply_send(ctx, id, idlen, &r, NULL);
    return GX_OK;
}

/* The handler of each request kind (core/proto.h declares the kinds; a
 * kind without a case here does not compile). A handler either replies
 * itself or returns an error status with a message in rq->err, which
 * becomes the error reply. */
/* The region request rq names in its "region" key (malloc'ed in *name). */
static int s_region_name(s_req *rq, char **name)
{
    char what[32];
    snprintf(what, sizeof what, "%s: region", rq->type);
    return gx_mp_strdup(gx_mp_find(rq->hdr, GX_F(REGION)), what, name, rq->err, sizeof rq->err);
}

/* RING_OPEN region: serve the ring at the start of this client's region
 * (daemon/ring.h). */
static int s_handle_ring_open(gxd_ctx *ctx, s_req *rq)
{
    char *name = NULL;
    const void *id = zmq_msg_data(&rq->identity);
    size_t idlen = zmq_msg_size(&rq->identity);
    int rc = s_region_name(rq, &name);
    gxd_shm_region *reg = NULL;
    if (rc == GX_OK && !(reg = gxd_shm_find(&ctx->shm, id, idlen, name)))
        rc = gx_errf(rq->err, sizeof rq->err, GX_ENOTFOUND,
                     "RING_OPEN: region '%s' is not registered by this client (SHM_REGISTER it "
                     "first)", name);
    if (rc == GX_OK) {
        char why_not[96];
        bool elevated = s_priority_elevated(ctx, rq, why_not, sizeof why_not);
        rq->err[0] = '\0';
        rc = gxd_ring_open(&ctx->rings, reg, id, idlen, elevated, rq->err, sizeof rq->err);
    }
    if (rc == GX_OK) {
        s_reply r;
        s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 0);
        s_reply_send(ctx, id, idlen, &r, NULL);
    }
    gxd_shm_region_release(&reg);
    free(name);
    return rc;
}

/* RING_BIND region, graph_id | graph_name: a slot of the client's ring
 * for that loaded graph. Reply: slot. */
static int s_handle_ring_bind(gxd_ctx *ctx, s_req *rq)
{
    char *name = NULL;
    uint32_t slot = 0;
    gxd_job *j = s_new_job(rq, GXD_JOB_RUN); /* for s_decode_graph_ref's model lookup */
    int rc = j ? s_region_name(rq, &name) : gx_errf(rq->err, sizeof rq->err, GX_ENOMEM, "out of memory");
    if (rc == GX_OK && gx_mp_find(rq->hdr, GX_F(GRAPH)))
        rc = gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                     "RING_BIND: name a loaded graph ('graph_id' or 'graph_name'), not 'graph'");
    if (rc == GX_OK && (rc = s_decode_graph_ref(ctx, rq, j)) == GX_OK) {
        rc = gxd_ring_bind(&ctx->rings, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity),
                           name, j->model, &slot, rq->err, sizeof rq->err);
        j->model = NULL; /* gxd_ring_bind took the reference */
    }
    if (rc == GX_OK) {
        s_reply r;
        s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 1);
        s_pack_kv(&r.pk, GX_F(SLOT), slot);
        s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    }
    gxd_job_destroy(&j);
    free(name);
    return rc;
}

/* RING_CLOSE region: the client's ring there stops; completions not yet
 * posted are dropped. */
static int s_handle_ring_close(gxd_ctx *ctx, s_req *rq)
{
    char *name = NULL;
    int rc = s_region_name(rq, &name);
    if (rc == GX_OK && gxd_ring_close(&ctx->rings, zmq_msg_data(&rq->identity),
                                      zmq_msg_size(&rq->identity), name) == 0)
        rc = gx_errf(rq->err, sizeof rq->err, GX_ENOTFOUND,
                     "RING_CLOSE: this client has no ring in region '%s'", name);
    if (rc == GX_OK) {
        s_reply r;
        s_reply_begin(&r, rq->type, rq->id, GX_OK, NULL, 0);
        s_reply_send(ctx, zmq_msg_data(&rq->identity), zmq_msg_size(&rq->identity), &r, NULL);
    }
    free(name);
    return rc;
}

typedef int (*s_handler)(gxd_ctx *ctx, s_req *rq);
static s_handler s_handler_of(gx_req k)
{
    switch (k) {
    case GX_REQ_PING: return s_handle_ping;
    case GX_REQ_LOAD: return s_handle_load;
    case GX_REQ_RUN: return s_handle_run;
    case GX_REQ_CANCEL: return s_handle_cancel;
    case GX_REQ_STATS: return s_handle_stats;
    case GX_REQ_EXPLAIN: return s_handle_explain;
    case GX_REQ_TUNE: return s_handle_tune;
    case GX_REQ_LIST: return s_handle_list;
    case GX_REQ_UNLOAD: return s_handle_unload;
    case GX_REQ_COMPILE: return s_handle_compile;
    case GX_REQ_SHM_REGISTER: return s_handle_shm_register;
    case GX_REQ_SHM_UNREGISTER: return s_handle_shm_unregister;
    case GX_REQ_SHM_LIST: return s_handle_shm_list;
    case GX_REQ_RING_OPEN: return s_handle_ring_open;
    case GX_REQ_RING_BIND: return s_handle_ring_bind;
    case GX_REQ_RING_CLOSE: return s_handle_ring_close;
    case GX_REQ_COUNT: break;
    }
    abort(); /* not reached: gx_req_parse gives a kind below GX_REQ_COUNT */
}

static void s_dispatch(gxd_ctx *ctx, s_req *rq, const void *hdr, size_t hdr_len, bool overflow)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    /* deep enough for any graph within limits.max_nesting (wire.h); a
     * message refused for its depth alone says which limit that follows from */
    int nesting = (int)ctx->cfg.limits_max_nesting, depth = gx_wire_depth_for_nesting(nesting);
    int rc = gx_wire_unpack_depth(hdr, hdr_len, depth, &up, rq->err, sizeof rq->err);
    if (rc == GX_EPROTO && gx_wire_check(hdr, hdr_len, GX_WIRE_DEPTH_LIMIT, NULL, 0) == GX_OK)
        rc = gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                     "msgpack nested deeper than %d, the depth that follows from "
                     "limits.max_nesting (%d): enough for any graph within that limit",
                     depth, nesting);
    int64_t v = 0;
    if (rc == GX_OK && up.data.type != MSGPACK_OBJECT_MAP)
        rc = gx_errf(rq->err, sizeof rq->err, GX_EPROTO, "header: expected a msgpack map");
    rq->hdr = &up.data;
    if (rc == GX_OK) {
        /* the id first, so that every later error can echo it */
        const msgpack_object *id = gx_mp_find(rq->hdr, GX_F(ID));
        if (!id)
            rc = gx_errf(rq->err, sizeof rq->err, GX_EPROTO, "id: missing (a correlation id is required)");
        else if ((rc = gx_mp_int(id, "id", 0, INT64_MAX, &v, rq->err, sizeof rq->err)) == GX_OK)
            rq->id = (uint64_t)v;
    }
    if (rc == GX_OK &&
        (rc = gx_mp_int(gx_mp_find(rq->hdr, GX_F(V)), "v (protocol version)", 0, INT32_MAX, &v, rq->err,
                        sizeof rq->err)) == GX_OK &&
        v != GX_PROTOCOL_VERSION)
        rc = gx_errf(rq->err, sizeof rq->err, GX_EVERSION,
                     "protocol version %lld is not supported (this daemon speaks %d)", (long long)v,
                     GX_PROTOCOL_VERSION);
    gx_req kind = GX_REQ_COUNT;
    if (rc == GX_OK) {
        const msgpack_object *t = gx_mp_find(rq->hdr, GX_F(TYPE));
        if (!gx_req_parse(t, &kind)) {
            char tname[64] = "?";
            if (t && t->type == MSGPACK_OBJECT_STR)
                snprintf(tname, sizeof tname, "%.*s", (int)(t->via.str.size < 40 ? t->via.str.size : 40),
                         t->via.str.ptr);
            char known[200];
            gx_req_names_list(known, sizeof known);
            rc = gx_errf(rq->err, sizeof rq->err, GX_EREQUEST, "unknown request type '%s' (%s)",
                         tname, known);
        } else {
            size_t max_frames = gx_req_takes_frames(kind) ? GXD_MAX_MSG_INPUTS : 0;
            rq->type = gx_req_name(kind);
            if (overflow || rq->nframes > max_frames)
                rc = gx_errf(rq->err, sizeof rq->err, GX_EPROTO,
                             "%s: too many frames (at most %zu tensor frames)", rq->type,
                             max_frames);
        }
    }
    if (rc == GX_OK && ctx->stopping)
        rc = gx_errf(rq->err, sizeof rq->err, GX_ESHUTDOWN, "the daemon is shutting down");
    if (rc == GX_OK)
        rc = s_handler_of(kind)(ctx, rq);
    else
        ctx->stats.protocol_errors++;
    if (rc < 0)
        s_reply_error(ctx, rq, rc, rq->err[0] ? rq->err : gx_strerror(rc));
    msgpack_unpacked_destroy(&up);
}

/* ---- clients that go away ---- */

/* The connection fd sent a request as identity: remember the pair (a
 * connection has one routing id, but a reused fd may carry a dead
 * connection's last requests too). */
static void s_peer_note(gxd_ctx *ctx, int fd, const zmq_msg_t *identity)
{
    size_t len = zmq_msg_size(identity);
    const void *id = zmq_msg_data((zmq_msg_t *)identity);
    if (fd < 0 || len > GXD_MAX_IDENTITY)
        return;
    for (size_t i = 0; i < ctx->n_peers; i++)
        if (ctx->peers[i].fd == fd && ctx->peers[i].identity_len == len &&
            memcmp(ctx->peers[i].identity, id, len) == 0)
            return;
    if (ctx->n_peers == ctx->cap_peers) {
        size_t cap = ctx->cap_peers ? 2 * ctx->cap_peers : 16;
        gxd_peer *np = realloc(ctx->peers, cap * sizeof *np);
        if (!np)
            return; /* ENOMEM: this client's jobs run on if it goes */
        ctx->peers = np;
        ctx->cap_peers = cap;
    }
    gxd_peer *p = &ctx->peers[ctx->n_peers++];
    p->fd = fd;
    p->identity_len = len;
    memcpy(p->identity, id, len);
}

/* The connection fd closed: drop its clients' queued jobs (answered
 * GX_ECANCELLED, a reply nobody receives, so every job still gets its one
 * reply) and ask their running ones to stop at their next step. */
static void s_peer_gone(gxd_ctx *ctx, int fd)
{
    for (size_t i = 0; i < ctx->n_peers;) {
        if (ctx->peers[i].fd != fd) {
            i++;
            continue;
        }
        gxd_peer p = ctx->peers[i];
        ctx->peers[i] = ctx->peers[--ctx->n_peers];
        size_t dropped = 0;
        gxd_job *list = gxd_queue_remove_client(&ctx->queue, p.identity, p.identity_len);
        for (gxd_job *j = list; j; j = j->next)
            dropped++;
        s_fail_list(ctx, list, GX_ECANCELLED, "the client disconnected; the job was not started");
        int cancelled = ctx->pool ? gxd_pool_cancel_client(ctx->pool, p.identity, p.identity_len) : 0;
        gxd_clients_drop(&ctx->clients, p.identity, p.identity_len);
        gxd_rings_drop_client(&ctx->rings, p.identity, p.identity_len);
        size_t regions = gxd_shm_drop_client(&ctx->shm, p.identity, p.identity_len);
        if (regions)
            GXD_LOG(&ctx->log, GXD_LOG_INFO, "a client disconnected: its %zu shared-memory "
                    "regions unregistered", regions);
        ctx->stats.gone_dropped += dropped;
        ctx->stats.gone_cancelled += (uint64_t)cancelled;
        if (dropped || cancelled)
            GXD_LOG(&ctx->log, GXD_LOG_INFO,
                    "a client disconnected: %zu queued jobs dropped, %d running ones cancelled",
                    dropped, cancelled);
    }
}

/* Connections closed whose fd no new connection has taken yet: a request
 * still read from one came after its client went away. */
static bool s_fd_closed(const gxd_ctx *ctx, int fd)
{
    for (size_t i = 0; i < ctx->n_closed; i++)
        if (ctx->closed[i] == fd)
            return true;
    return false;
}

static void s_fd_set_closed(gxd_ctx *ctx, int fd, bool closed)
{
    for (size_t i = 0; i < ctx->n_closed; i++)
        if (ctx->closed[i] == fd) {
            if (!closed)
                ctx->closed[i] = ctx->closed[--ctx->n_closed];
            return;
        }
    if (!closed)
        return;
    if (ctx->n_closed == ctx->cap_closed) {
        size_t cap = ctx->cap_closed ? 2 * ctx->cap_closed : 16;
        int *nc = realloc(ctx->closed, cap * sizeof *nc);
        if (!nc)
            return;
        ctx->closed = nc;
        ctx->cap_closed = cap;
    }
    ctx->closed[ctx->n_closed++] = fd;
}

/*
 * Handle the socket monitor's events now pending. Called before every
 * request is read: libzmq queues a connection's DISCONNECTED event before
 * it closes the fd, so before the fd can be reused by a new connection and
 * before any request from that one, and a reused fd is never mistaken for
 * the old client.
 */
static void s_monitor_drain(gxd_ctx *ctx)
{
    while (ctx->monitor) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, ctx->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + 2, 4);
        }
        bool more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) { /* the endpoint frame */
            zmq_msg_init(&addr);
            zmq_msg_recv(&addr, ctx->monitor, 0);
            zmq_msg_close(&addr);
        }
        if (event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_ACCEPTED) {
            s_peer_gone(ctx, (int)value); /* accepted: stale entries for a reused fd */
            s_fd_set_closed(ctx, (int)value, event == ZMQ_EVENT_DISCONNECTED);
        }
    }
}

/* Receive one multipart message and handle it. */
static void s_on_request(gxd_ctx *ctx)
{
    s_monitor_drain(ctx);
    s_req rq;
    memset(&rq, 0, sizeof rq);
    rq.type = GX_REQ_ERROR_NAME;
    zmq_msg_init(&rq.identity);
    if (zmq_msg_recv(&rq.identity, ctx->router, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&rq.identity);
        return;
    }
    ctx->stats.requests++;
    zmq_msg_t hdr, *frames = calloc(GXD_MAX_FRAMES, sizeof *frames);
    zmq_msg_init(&hdr);
    bool have_hdr = false, overflow = false;
    size_t too_big = 0;
    int more = zmq_msg_more(&rq.identity);
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, ctx->router, 0) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        if (zmq_msg_size(&m) > (uint64_t)ctx->cfg.limits_max_message_bytes)
            too_big = zmq_msg_size(&m);
        if (!have_hdr) {
            zmq_msg_move(&hdr, &m);
            have_hdr = true;
        } else if (frames && rq.nframes < GXD_MAX_FRAMES) {
            zmq_msg_init(&frames[rq.nframes]);
            zmq_msg_move(&frames[rq.nframes++], &m);
        } else {
            overflow = true;
        }
        zmq_msg_close(&m);
    }
    rq.frames = frames;
    if (!frames) {
        s_reply_error(ctx, &rq, GX_ENOMEM, "out of memory receiving the request");
    } else if (!have_hdr) {
        ctx->stats.protocol_errors++;
        s_reply_error(ctx, &rq, GX_EPROTO, "empty message: expected a msgpack header frame");
    } else if (too_big) {
        char msg[160];
        snprintf(msg, sizeof msg, "a frame of %zu bytes exceeds limits.max_message_bytes (%lld)",
                 too_big, (long long)ctx->cfg.limits_max_message_bytes);
        ctx->stats.protocol_errors++;
        s_reply_error(ctx, &rq, GX_ELIMIT, msg);
    } else {
        rq.hdr_msg = &hdr;
        int fd = zmq_msg_get(&hdr, ZMQ_SRCFD);
        s_peer_note(ctx, fd, &rq.identity);
        s_dispatch(ctx, &rq, zmq_msg_data(&hdr), zmq_msg_size(&hdr), overflow);
        if (fd >= 0 && s_fd_closed(ctx, fd))
            s_peer_gone(ctx, fd); /* sent just before its client went away */
    }
    for (size_t i = 0; i < rq.nframes; i++)
        zmq_msg_close(&frames[i]);
    free(frames);
    zmq_msg_close(&hdr);
    zmq_msg_close(&rq.identity);
}

/* ---- lifetime ---- */

/* Signals may land on any thread (libraries start threads of their own
 * before main), so the handler only writes the signal number to a pipe the
 * I/O thread polls. The pipe is the one piece of process-wide state: signal
 * dispositions are process-wide too. */
static int s_signal_pipe[2] = {-1, -1};

static void s_on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t n = write(s_signal_pipe[1], &b, 1);
    (void)n;
    errno = saved;
}

static int s_install_signals(gxd_ctx *ctx, char *err, size_t errlen)
{
    if (s_signal_pipe[0] < 0 && pipe2(s_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "pipe: %s", strerror(errno));
    ctx->signal_fd = s_signal_pipe[0];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return GX_OK;
}

/* Whether a listener answers on the unix socket at path: 1 yes, 0 no one
 * (ECONNREFUSED: a stale file), <0 -errno when that cannot be told. A
 * connect, not a PING, so a busy daemon is not mistaken for a stale one. */
static int s_ipc_alive(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 1
             : errno == ECONNREFUSED                            ? 0
             : errno == EAGAIN                                  ? 1 /* a full backlog: live */
                                                                : -errno;
    close(fd);
    return rc;
}

/* For ipc:// endpoints, before binding: the socket's directory exists (made
 * 0700 when it is the private default, else with search bits for those
 * socket_mode lets in) and is safe (core/sockpath.h); a socket file a
 * daemon still answers on is refused, a stale one is removed; anything else
 * at the path is left for its owner. */
static int s_prepare_ipc(gxd_ctx *ctx, const char *ep, char *err, size_t errlen)
{
    if (strncmp(ep, "ipc://", 6) != 0 || ep[6] == '@')
        return GX_OK;
    const char *path = ep + 6;
    char dir[640], priv[640], why[768];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    bool is_private = geteuid() != 0 && gx_sock_private_dir(priv, sizeof priv) == GX_OK &&
                      strcmp(dir, priv) == 0;
    mode_t dmode = 0700 | (ctx->socket_mode & 0070 ? 0010 : 0) | (ctx->socket_mode & 0007 ? 0001 : 0);
    if (is_private)
        dmode = 0700;
    if (mkdir(dir, dmode) == 0) {
        /* mkdir's mode went through the umask; a group of our choosing */
        if (chmod(dir, dmode) != 0 || (ctx->socket_gid != (gid_t)-1 && !is_private &&
                                       chown(dir, (uid_t)-1, ctx->socket_gid) != 0))
            return gx_errf(err, errlen, GX_EIO, "cannot set the mode or group of %s: %s", dir,
                           strerror(errno));
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "created %s (mode %04o) for the socket", dir, (unsigned)dmode);
    } else if (errno != EEXIST) {
        return gx_errf(err, errlen, GX_EIO, "cannot create %s for %s: %s", dir, ep, strerror(errno));
    }
    int rc = gx_sock_check_dir(dir, is_private, why, sizeof why);
    if (rc < 0)
        return gx_errf(err, errlen, rc, "refusing to bind %s: %s", ep, why);
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? GX_OK
                               : gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISSOCK(sb.st_mode))
        return gx_errf(err, errlen, GX_EBUSY, "%s exists and is not a socket; remove it or choose "
                       "another --socket", path);
    int alive = s_ipc_alive(path);
    if (alive > 0)
        return gx_errf(err, errlen, GX_EBUSY, "another gexecd is already serving %s; stop it "
                       "first or choose another --socket", ep);
    if (alive < 0)
        return gx_errf(err, errlen, GX_EIO, "cannot tell whether a daemon serves %s: %s", path,
                       strerror(-alive));
    if (unlink(path) != 0)
        return gx_errf(err, errlen, GX_EIO, "cannot remove the stale socket %s (owner uid %u): %s",
                       path, (unsigned)sb.st_uid, strerror(errno));
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "removed the stale socket %s (no daemon answered there)", path);
    return GX_OK;
}

/* The ipc socket file just bound at ep gets socket_mode and socket_group. */
static int s_ipc_set_mode(gxd_ctx *ctx, const char *ep, char *err, size_t errlen)
{
    if (strncmp(ep, "ipc://", 6) != 0 || ep[6] == '@')
        return GX_OK;
    if (chmod(ep + 6, ctx->socket_mode) != 0 ||
        (ctx->socket_gid != (gid_t)-1 && chown(ep + 6, (uid_t)-1, ctx->socket_gid) != 0))
        return gx_errf(err, errlen, GX_EIO, "cannot set the mode %04o or group of %s: %s",
                       (unsigned)ctx->socket_mode, ep + 6, strerror(errno));
    return GX_OK;
}

/* tcp://:PORT (no host) binds loopback; anything else is bound as given.
 * A tcp endpoint is bound with CURVE when the daemon has keys, and
 * refused when it has none and other machines could reach it (auth.h). */
static int s_bind(gxd_ctx *ctx, const char *given, char *err, size_t errlen)
{
    char ep[640];
    if (strncmp(given, "tcp://:", 7) == 0)
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:%s", given + 7);
    else
        snprintf(ep, sizeof ep, "%s", given);
    int rc = gxd_auth_prepare_bind(ctx->auth, ctx->router, ep, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = s_prepare_ipc(ctx, ep, err, errlen)) < 0)
        return rc;
    /* the socket file is made 0600 and opened to socket_mode once its group
     * is set (the umask is the process's: for this moment, a file another
     * thread makes comes out 0600 at worst) */
    mode_t old_umask = umask(0177);
    int bound = zmq_bind(ctx->router, ep);
    umask(old_umask);
    if (bound != 0)
        return gx_errf(err, errlen, GX_EIO, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
    if ((rc = s_ipc_set_mode(ctx, ep, err, errlen)) < 0)
        return rc;
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "listening on %s%s", ep,
            ctx->auth && strncmp(ep, "tcp://", 6) == 0 ? " (CURVE)" : "");
    return GX_OK;
}

/* The compiler's partition options from the config: the backends of
 * partition.prefer that this build can run, in order (the CPU is always
 * the fallback); the others are logged and skipped. */
static void s_partition_opts(gxd_ctx *ctx)
{
    gxd_partition_opts *o = &ctx->part;
    *o = (gxd_partition_opts){.min_nodes = (int)ctx->cfg.partition_min_nodes,
                              .no_cost_check = !ctx->cfg.partition_cost_check};
    for (int i = 0; i < ctx->cfg.n_partition_prefer && o->n_backends < GXD_MAX_DEVICES; i++) {
        const gx_backend *b = gx_backend_find(ctx->cfg.partition_prefer[i]);
        char why[160];
        if (!b) /* the config check refused it already */
            continue;
        if (!gx_backend_runnable(b, why, sizeof why)) {
            GXD_LOG(&ctx->log, GXD_LOG_INFO, "partition: not offering backend '%s': %s",
                    b->name, why);
            continue;
        }
        o->backends[o->n_backends++] = b;
    }
}

/* The explorer's question: no job queued or running? epoch: the queue's
 * post count, which moves whenever a job arrives. */
static bool s_tune_idle(void *arg, uint64_t *epoch)
{
    gxd_ctx *ctx = arg;
    *epoch = atomic_load(&ctx->queue.posts);
    return ctx->pool && gxd_queue_len(&ctx->queue) == 0 && gxd_pool_busy(ctx->pool) == 0;
}

/* A new winner: cached plans are checked for a re-plan at the next tick
 * whatever their job counts (explorer thread: atomics only). */
static void s_tune_changed(void *arg)
{
    gxd_ctx *ctx = arg;
    gxd_models_replan_force(&ctx->models);
}

/* The best-implementation registry (docs/tune.md): tune.db in tune.dir
 * (default: the state directory, the parent of the profile directory). */
static int s_tune_start(gxd_ctx *ctx, char *err, size_t errlen)
{
    gxd_tune_mode mode = GXD_TUNE_EXPLORE;
    if (ctx->cfg.tune_mode && gxd_tune_mode_parse(ctx->cfg.tune_mode, &mode) < 0)
        return gx_errf(err, errlen, GX_ECONFIG, "tune.mode: '%s' is not off, cache or explore",
                       ctx->cfg.tune_mode);
    if (mode == GXD_TUNE_OFF)
        return GX_OK;
    char dir[1024] = "";
    const char *cfg = ctx->cfg.tune_dir;
    if (cfg && *cfg && strcmp(cfg, "default") != 0) {
        snprintf(dir, sizeof dir, "%s", cfg);
    } else if (!cfg || *cfg) { /* default: the directory that holds the profiles' */
        const char *p = ctx->cfg.profile_dir;
        gxd_profile_dir(p && *p ? p : "default", dir, sizeof dir);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        else
            dir[0] = '\0';
    }
    gxd_tune_opts o = {.mode = mode,
                       .dir = dir,
                       .budget_ms = ctx->cfg.tune_budget_ms,
                       .max_records = ctx->cfg.tune_max_records,
                       .log = &ctx->log,
                       .upstream = ctx->cfg.tune_upstream,
                       .upstream_max_records = ctx->cfg.tune_upstream_max_records};
    if (!(ctx->tune = gxd_tune_new(&o, err, errlen)))
        return GX_ENOMEM;
    gxd_tune_set_idle(ctx->tune, s_tune_idle, ctx);
    gxd_tune_set_changed(ctx->tune, s_tune_changed, ctx);
    ctx->limits.tune = ctx->tune;
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "tune: %s, records in %s", gxd_tune_mode_name(mode),
            dir[0] ? dir : "memory only");
    return GX_OK;
}

/* The artifact cache (artifacts.dir): a path; "" off; "default":
 * "artifacts" next to the profile store's directory pdir ("": off). */
static void s_artifacts_start(gxd_ctx *ctx, const char *pdir)
{
    char dir[1024] = "";
    const char *cfg = ctx->cfg.artifacts_dir;
    if (cfg && *cfg && strcmp(cfg, "default") != 0) {
        snprintf(dir, sizeof dir, "%s", cfg);
    } else if (!cfg || *cfg) {
        const char *slash = strrchr(pdir, '/');
        if (slash && slash != pdir)
            snprintf(dir, sizeof dir, "%.*s/artifacts", (int)(slash - pdir), pdir);
    }
    if (gxd_models_set_artifacts(&ctx->models, dir, ctx->cfg.artifacts_max_files,
                                 ctx->cfg.artifacts_max_bytes, &ctx->log) < 0)
        GXD_LOG(&ctx->log, GXD_LOG_WARN, "artifacts in %s: out of memory, the cache is off", dir);
    else if (dir[0])
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "artifacts in %s", dir);
}

int gxd_server_init(gxd_ctx *ctx, char *err, size_t errlen)
{
    int rc;
    ctx->signal_fd = ctx->done_fd = -1;
    ctx->started_us = gxd_now_us();
    pthread_mutex_init(&ctx->done_mu, NULL);
    ctx->limits = (gxd_compile_limits){.max_nodes = ctx->cfg.limits_max_nodes,
                                       .max_tensor_bytes = ctx->cfg.limits_max_tensor_bytes,
                                       .max_arena_bytes = ctx->cfg.limits_max_arena_bytes,
                                       .max_compile_us = ctx->cfg.limits_max_compile_ms * 1000,
                                       .part = &ctx->part,
                                       .no_rewrite = !ctx->cfg.compiler_rewrite,
                                       .no_fuse = !ctx->cfg.compiler_fuse,
                                       .no_graphs = !ctx->cfg.sched_device_graphs,
                                       .no_device_time = !ctx->cfg.sched_device_time,
                                       .no_layout = !ctx->cfg.compiler_layout,
                                       .no_layout_times = !ctx->cfg.compiler_layout_measured};
    s_partition_opts(ctx);
    ctx->n_priority_uids = 0;
    for (int i = 0; i < ctx->cfg.n_limits_priority_users; i++) {
        char why[256];
        if (gxd_config_user_uid(ctx->cfg.limits_priority_users[i],
                                &ctx->priority_uids[ctx->n_priority_uids], why, sizeof why) < 0)
            return gx_errf(err, errlen, GX_ECONFIG, "limits.priority_users: %s", why);
        ctx->n_priority_uids++;
    }
    gxd_models_init(&ctx->models, (size_t)ctx->cfg.graphs_max);
    if (gxd_shm_init(&ctx->shm, (size_t)ctx->cfg.limits_shm_regions_per_client,
                     (size_t)ctx->cfg.limits_shm_bytes) < 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "cannot install the SIGBUS handler: %s",
                       strerror(errno));
    gxd_shm_set_uid_limits(&ctx->shm, (size_t)ctx->cfg.limits_shm_regions_per_uid,
                           (size_t)ctx->cfg.limits_shm_bytes_per_uid);
    gxd_rings_init(&ctx->rings, &ctx->queue, (int)ctx->cfg.limits_max_client_priority);
    ctx->models.unbind = gxd_rings_unbind; /* ring-bound graphs are evicted too */
    ctx->models.unbind_arg = &ctx->rings;
    gxd_models_set_budget(&ctx->models, gxd_config_memory_budget(&ctx->cfg));
    if ((rc = s_tune_start(ctx, err, errlen)) < 0)
        return rc;
    char pdir[1024];
    gxd_profile_dir(ctx->cfg.profile_dir, pdir, sizeof pdir);
    if (gxd_models_set_profile(&ctx->models, pdir, ctx->cfg.profile_max_entries,
                               ctx->cfg.profile_max_bytes, &ctx->log) < 0) {
        GXD_LOG(&ctx->log, GXD_LOG_WARN, "profiles in %s: out of memory, the store is off", pdir);
        pdir[0] = '\0';
    }
    ctx->profiles_saved_us = ctx->started_us;
    if (pdir[0])
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "profiles in %s", pdir);
    s_artifacts_start(ctx, pdir);
    ctx->replan_tick_us = ctx->started_us;
    if (ctx->tune) /* a new winner also makes a plan stale */
        ctx->models.replan.stale = gxd_tune_plan_stale;
    if (ctx->cfg.compiler_replan &&
        (rc = gxd_models_replan_start(&ctx->models, &ctx->limits,
                                      ctx->cfg.compiler_replan_min_jobs)) < 0)
        return gx_errf(err, errlen, rc, "cannot start the re-planner thread");
    if ((rc = gxd_queue_init(&ctx->queue, (size_t)ctx->cfg.queue_max_jobs,
                             (size_t)ctx->cfg.queue_max_bytes)) < 0)
        return gx_errf(err, errlen, rc, "cannot create the job queue");
    gxd_queue_set_spin(&ctx->queue, ctx->cfg.sched_spin_us);
    gxd_queue_set_client_max(&ctx->queue, (size_t)ctx->cfg.limits_client_jobs);
    gxd_queue_set_uid_max(&ctx->queue, (size_t)ctx->cfg.limits_uid_jobs);
    gxd_clients_init(&ctx->clients, (size_t)ctx->cfg.limits_client_graphs,
                     gxd_config_client_memory(&ctx->cfg));

    if ((rc = s_install_signals(ctx, err, errlen)) < 0)
        return rc;
    if ((ctx->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "eventfd: %s", strerror(errno));

    if ((rc = gxd_topo_new(ctx->cfg.cpus, &ctx->topo, err, errlen)) < 0)
        return rc;
    char desc[256];
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "topology: %s", gxd_topo_describe(ctx->topo, desc, sizeof desc));

    if (!(ctx->zctx = zmq_ctx_new()) || !(ctx->router = zmq_socket(ctx->zctx, ZMQ_ROUTER)))
        return gx_errf(err, errlen, GX_EINTERNAL, "zmq: %s", zmq_strerror(zmq_errno()));
    int one = 1, hwm = 100000, linger = 2000;
    zmq_setsockopt(ctx->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(ctx->router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(ctx->router, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(ctx->router, ZMQ_LINGER, &linger, sizeof linger);
    if (ctx->cfg.client_heartbeat_ms > 0) { /* a hung client counts as gone (s_peer_gone) */
        int ivl = (int)ctx->cfg.client_heartbeat_ms, timeout = 3 * ivl;
        zmq_setsockopt(ctx->router, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
        zmq_setsockopt(ctx->router, ZMQ_HEARTBEAT_TIMEOUT, &timeout, sizeof timeout);
    }
    if ((rc = gxd_auth_new(ctx->zctx, &ctx->cfg, &ctx->log, &ctx->auth, err, errlen)) < 0)
        return rc;
    char why[256];
    ctx->socket_mode = 0660;
    ctx->socket_gid = (gid_t)-1;
    if ((ctx->cfg.socket_mode &&
         gxd_config_socket_mode(ctx->cfg.socket_mode, &ctx->socket_mode, why, sizeof why) < 0) ||
        (ctx->cfg.socket_group &&
         gxd_config_group_gid(ctx->cfg.socket_group, &ctx->socket_gid, why, sizeof why) < 0))
        return gx_errf(err, errlen, GX_ECONFIG, "%s", why);
    if (ctx->cfg.socket && *ctx->cfg.socket)
        snprintf(ctx->endpoint, sizeof ctx->endpoint, "%s", ctx->cfg.socket);
    else
        gx_default_endpoint(ctx->endpoint, sizeof ctx->endpoint);
    if ((rc = s_bind(ctx, ctx->endpoint, err, errlen)) < 0)
        return rc;
    ctx->ipc_bound = strncmp(ctx->endpoint, "ipc://", 6) == 0;
    for (int i = 0; i < ctx->cfg.n_tcp; i++)
        if ((rc = s_bind(ctx, ctx->cfg.tcp[i], err, errlen)) < 0)
            return rc;
    /* connections accepted and closed, so a client that goes away has its
     * jobs dropped (s_peer_gone) */
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://gexecd-monitor-%p", (void *)ctx);
    if (zmq_socket_monitor(ctx->router, mon, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(ctx->monitor = zmq_socket(ctx->zctx, ZMQ_PAIR)) ||
        /* no high-water mark: a burst of connections loses no event */
        zmq_setsockopt(ctx->monitor, ZMQ_RCVHWM, &(int){0}, sizeof(int)) != 0 ||
        zmq_setsockopt(ctx->monitor, ZMQ_LINGER, &(int){0}, sizeof(int)) != 0 ||
        zmq_connect(ctx->monitor, mon) != 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "zmq socket monitor: %s", zmq_strerror(zmq_errno()));

    if ((rc = gxd_metrics_new((size_t)ctx->cfg.graphs_max, &ctx->metrics)) < 0)
        return gx_errf(err, errlen, rc, "out of memory for the metrics");
    if (ctx->cfg.metrics_listen && *ctx->cfg.metrics_listen) {
        if ((rc = gxd_metrics_http_start(ctx, ctx->cfg.metrics_listen, err, errlen)) < 0)
            return rc;
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "metrics on %s", gxd_metrics_url(ctx->metrics));
    }
    if ((rc = gxd_pool_start(ctx, s_job_done, ctx, &ctx->pool, err, errlen)) < 0)
        return rc;
    ctx->rings.hooks = (gxd_ring_hooks){.cancel_running = s_ring_cancel_running,
                                        .finished = s_job_done, .arg = ctx};
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "%d workers started", gxd_pool_size(ctx->pool));
    if (ctx->tune && (rc = gxd_tune_explore_start(ctx->tune)) < 0)
        return gx_errf(err, errlen, rc, "cannot start the tune explorer thread");
    /* last: graphs.preload compiles and runs on the pool, before the
     * socket is read and READY=1 */
    return gxd_preload_run(ctx, err, errlen);
}

static void s_poll_once(gxd_ctx *ctx, long timeout_ms)
{
    zmq_pollitem_t items[] = {
        {ctx->router, 0, ZMQ_POLLIN, 0},
        {NULL, ctx->done_fd, ZMQ_POLLIN, 0},
        {NULL, ctx->signal_fd, ZMQ_POLLIN, 0},
        {ctx->monitor, 0, ZMQ_POLLIN, 0},
        {NULL, gxd_metrics_http_fd(ctx->metrics), ZMQ_POLLIN, 0}, /* the HTTP endpoint */
    };
    int n = !ctx->monitor ? 3 : items[4].fd < 0 ? 4 : 5;
    if (zmq_poll(items, n, timeout_ms) < 0)
        return;
    s_flush_done(ctx); /* woken by done_fd, or ring jobs left quietly: before a scrape too */
    if (n == 5) /* every turn, for its connection timeouts too */
        gxd_metrics_http_run(ctx->metrics);
    if (items[3].revents & ZMQ_POLLIN)
        s_monitor_drain(ctx);
    gxd_models_trim(&ctx->models); /* plans compiled since may exceed the memory budget */
    if (items[2].revents & ZMQ_POLLIN) {
        unsigned char sig;
        while (read(ctx->signal_fd, &sig, 1) == 1) {
            if (sig == SIGHUP) {
                if (!ctx->stopping)
                    gxd_reload(ctx);
                continue;
            }
            if (!ctx->stopping)
                GXD_LOG(&ctx->log, GXD_LOG_INFO, "%s: shutting down", strsignal(sig));
            ctx->stopping = true;
        }
    }
    /* Bounded burst so replies and signals are not starved by a flood. */
    for (int i = 0; i < 256 && (items[0].revents & ZMQ_POLLIN); i++) {
        int events = 0;
        size_t len = sizeof events;
        if (zmq_getsockopt(ctx->router, ZMQ_EVENTS, &events, &len) != 0 || !(events & ZMQ_POLLIN))
            break;
        if (i > 0)
            s_flush_done(ctx);
        s_on_request(ctx);
    }
    s_fail_list(ctx, gxd_queue_expire(&ctx->queue, gxd_now_us()), GX_ETIMEDOUT,
                "deadline expired while the job was queued");
    if (ctx->models.unloading) /* unloaded graphs whose last job is done */
        gxd_models_reap(&ctx->models);
}

/* WATCHDOG=1 at half of WatchdogSec=, from the I/O thread's loop (which
 * turns at least once a second): a hung I/O thread gets restarted. */
static void s_watchdog(gxd_ctx *ctx)
{
    int64_t now = gxd_now_us();
    if (ctx->watchdog_us && now - ctx->watchdog_last_us >= (int64_t)ctx->watchdog_us / 2) {
        sd_notify(0, "WATCHDOG=1");
        ctx->watchdog_last_us = now;
    }
}

int gxd_server_run(gxd_ctx *ctx)
{
    sd_notifyf(0, "READY=1\nSTATUS=serving on %s with %d workers", ctx->endpoint,
               gxd_pool_size(ctx->pool));
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "ready");
    if (sd_watchdog_enabled(0, &ctx->watchdog_us) <= 0)
        ctx->watchdog_us = 0;
    ctx->watchdog_last_us = gxd_now_us();
    while (!ctx->stopping) {
        s_watchdog(ctx);
        long timeout = 1000;
        if (ctx->cfg.compiler_replan && ctx->cfg.compiler_replan_ms < timeout)
            timeout = (long)ctx->cfg.compiler_replan_ms;
        int64_t d = gxd_queue_next_deadline(&ctx->queue);
        if (d) {
            int64_t left = (d - gxd_now_us() + 999) / 1000;
            timeout = left < 0 ? 0 : left < timeout ? (long)left : timeout;
        }
        s_poll_once(ctx, timeout);
        if (gxd_now_us() - ctx->profiles_saved_us >= GXD_PROFILE_SAVE_EVERY_US) {
            gxd_models_save_profiles(&ctx->models);
            ctx->profiles_saved_us = gxd_now_us();
        }
        if (ctx->cfg.compiler_replan &&
            gxd_now_us() - ctx->replan_tick_us >= ctx->cfg.compiler_replan_ms * 1000) {
            gxd_models_replan_tick(&ctx->models);
            ctx->replan_tick_us = gxd_now_us();
        }
    }
    sd_notify(0, "STOPPING=1");
    s_fail_list(ctx, gxd_queue_close(&ctx->queue), GX_ESHUTDOWN,
                "the daemon is shutting down; the job was not started");
    int64_t grace_end = gxd_now_us() + ctx->cfg.shutdown_grace_ms * 1000;
    bool cancelled = false;
    while (gxd_pool_busy(ctx->pool) > 0) {
        if (!cancelled && gxd_now_us() >= grace_end) {
            GXD_LOG(&ctx->log, GXD_LOG_WARN, "grace period over: cancelling running jobs");
            gxd_pool_cancel_all(ctx->pool);
            cancelled = true;
        }
        s_poll_once(ctx, 50);
    }
    gxd_tune_explore_stop(ctx->tune);
    gxd_rings_stop(&ctx->rings); /* their cancels reach the pool */
    gxd_pool_join(&ctx->pool);
    s_flush_done(ctx);
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "stopped");
    return 0;
}

void gxd_server_fini(gxd_ctx *ctx)
{
    gxd_rings_fini(&ctx->rings); /* no ring thread queues jobs from here on */
    gxd_tune_explore_stop(ctx->tune); /* it asks the pool whether it is idle */
    if (ctx->pool) {
        s_fail_list(ctx, gxd_queue_close(&ctx->queue), GX_ESHUTDOWN, "the daemon is shutting down");
        gxd_pool_join(&ctx->pool);
    }
    if (ctx->done_fd >= 0)
        s_flush_done(ctx);
    if (ctx->router)
        zmq_socket_monitor(ctx->router, NULL, 0);
    if (ctx->monitor)
        zmq_close(ctx->monitor);
    free(ctx->peers);
    free(ctx->closed);
    ctx->peers = NULL;
    ctx->closed = NULL;
    ctx->n_peers = ctx->cap_peers = ctx->n_closed = ctx->cap_closed = 0;
    ctx->monitor = NULL;
    if (ctx->router)
        zmq_close(ctx->router);
    gxd_auth_destroy(&ctx->auth); /* its sockets are in zctx */
    if (ctx->zctx)
        zmq_ctx_term(ctx->zctx);
    ctx->router = ctx->zctx = NULL;
    if (ctx->ipc_bound && ctx->endpoint[6] != '@') /* a clean stop leaves no socket file */
        unlink(ctx->endpoint + 6);
    ctx->ipc_bound = false;
    gxd_models_fini(&ctx->models);
    gxd_shm_fini(&ctx->shm); /* after the jobs that held regions */
    gxd_clients_fini(&ctx->clients);
    gxd_tune_destroy(&ctx->tune); /* after the plans that name it */
    ctx->limits.tune = NULL;
    gxd_metrics_destroy(&ctx->metrics);
    gxd_queue_fini(&ctx->queue);
    gxd_topo_destroy(&ctx->topo);
    if (ctx->done_fd >= 0)
        close(ctx->done_fd);
    ctx->signal_fd = ctx->done_fd = -1;
    pthread_mutex_destroy(&ctx->done_mu);
}
