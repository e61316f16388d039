/* Submission/completion rings of local clients. See ring.h and docs/shm.md. */
#include <config.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ring.h"
#include "core/wire.h"
#include "daemon/models.h"
#include "daemon/ring.h"

#define S_SPIN_US 20           /* a ring thread polls this long before it sleeps */
#define S_SLEEP_US 100000      /* and sleeps at most this long (a backstop, not a need) */
#define S_ID_BIT (1ull << 63)  /* ring jobs' ids: never a socket request's */

/* The id of the job a ring of serial made of its submission at index:
 * unique per client (with the serial) and known again from the index
 * alone, so a cancel needs no table of jobs in flight. */
#define S_JOB_ID(serial, index) (S_ID_BIT | (uint64_t)(serial) << 32 | (uint32_t)(index))

struct gxd_ring {
    gxd_rings *owner;
    gxd_shm_region *region; /* a reference */
    uint8_t identity[GXD_MAX_IDENTITY];
    size_t identity_len;
    uint32_t entries, mask;
    bool elevated;     /* its client is one of limits.priority_users */
    uint64_t data_off; /* inputs and outputs lie at or after this */
    gx_ring_hdr *hdr;  /* in the region: hostile */
    gx_ring_sqe *sq;
    gx_ring_cqe *cq;
    uint32_t sq_head;  /* submissions taken: the ring thread's own count */
    uint32_t serial;   /* its jobs' ids carry it (S_JOB_ID) */
    pthread_mutex_t mu; /* posting completions, slots, closed */
    uint32_t posted;    /* completions posted */
    bool closed;
    struct gxd_model *slots[GX_RING_MAX_SLOTS]; /* references */
    uint32_t n_slots;
    pthread_t thread;
    bool running;      /* thread not yet joined: the table's (I/O thread) */
    atomic_bool stop;
    atomic_int refs;
    struct gxd_ring *next;
};

static gxd_ring *s_ref(gxd_ring *r)
{
    atomic_fetch_add(&r->refs, 1);
    return r;
}

/* Drops slot i's graph (its binding counted off first: see models.c,
 * s_idle). Under r->mu, or with r unreachable. */
static void s_unslot(gxd_ring *r, uint32_t i)
{
    if (!r->slots[i])
        return;
    atomic_fetch_sub(&r->slots[i]->ring_binds, 1);
    gxd_model_release(&r->slots[i]);
}

static void s_release(gxd_ring **rp)
{
    gxd_ring *r = *rp;
    *rp = NULL;
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (uint32_t i = 0; i < r->n_slots; i++)
        s_unslot(r, i);
    gxd_shm_region_release(&r->region);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void gxd_rings_init(gxd_rings *rs, gxd_queue *queue, int max_priority)
{
    memset(rs, 0, sizeof *rs);
    rs->queue = queue;
    atomic_init(&rs->max_priority, max_priority);
}

static bool s_mine(const gxd_ring *r, const void *identity, size_t identity_len)
{
    return r->identity_len == identity_len && memcmp(r->identity, identity, identity_len) == 0;
}

/* Writes c as the next completion and wakes the client if it sleeps;
 * dropped once the ring is closed. */
static void s_post(gxd_ring *r, const gx_ring_cqe *c)
{
    pthread_mutex_lock(&r->mu);
    if (r->closed) {
        pthread_mutex_unlock(&r->mu);
        atomic_fetch_add(&r->owner->stats.dropped, 1);
        return;
    }
    /* room: the ring thread takes a submission only while fewer than
     * entries of its completions are unread (s_thread) */
    memcpy(&r->cq[r->posted & r->mask], c, sizeof *c);
    r->posted++;
    gx_ring_store_wake(&r->hdr->cq_tail, r->posted, &r->hdr->cq_sleep, &r->hdr->cq_futex);
    pthread_mutex_unlock(&r->mu);
}

static void s_post_error(gxd_ring *r, uint64_t user, int status, const char *msg)
{
    gx_ring_cqe c;
    memset(&c, 0, sizeof c);
    c.user = user;
    c.status = status;
    snprintf(c.message, sizeof c.message, "%s", msg);
    atomic_fetch_add(&r->owner->stats.refused, 1);
    s_post(r, &c);
}

/* Input i of the submission e (a copy) into j->in[i]. */
static int s_input(gxd_ring *r, gxd_job *j, const gx_ring_tensor *t, size_t i, char *err,
                   size_t errlen)
{
    gxd_job_input *in = &j->in[i];
    size_t nbytes;
    void *p;
    zmq_msg_init(&in->frame);
    j->n_in = i + 1;
    if (!memchr(t->name, 0, sizeof t->name) || !t->name[0])
        return gx_errf(err, errlen, GX_EINVAL, "ring: input %zu has no NUL-terminated name", i);
    if (t->dtype < 0 || t->dtype >= GX_DTYPE_COUNT || t->ndim < 0 || t->ndim > GX_MAX_DIMS ||
        gx_wire_is_value(GX_KIND_TENSOR, (gx_dtype)t->dtype) ||
        !gx_shape_nbytes((gx_dtype)t->dtype, t->ndim, t->shape, &nbytes) || nbytes != t->bytes)
        return gx_errf(err, errlen, GX_EINVAL,
                       "ring: input '%s': dtype %d, %d dimensions and %llu bytes do not make a "
                       "tensor (strings and sequences go over the socket)",
                       t->name, t->dtype, t->ndim, (unsigned long long)t->bytes);
    if (!(in->name = strdup(t->name)))
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    if (t->offset < r->data_off)
        return gx_errf(err, errlen, GX_EINVAL,
                       "ring: input '%s' at offset %llu lies in the ring itself (data starts at "
                       "%llu)", t->name, (unsigned long long)t->offset,
                       (unsigned long long)r->data_off);
    int rc = gxd_shm_slice(r->region, t->offset, nbytes, &p, err, errlen);
    if (rc < 0)
        return rc;
    in->view.dtype = (gx_dtype)t->dtype;
    in->view.ndim = t->ndim;
    memcpy(in->view.shape, t->shape, sizeof in->view.shape);
    in->view.numel = (int64_t)(nbytes / gx_dtype_size(in->view.dtype));
    if (gxd_shm_in_place(in->view.dtype)) { /* read where it lies, as a socket RUN's shm */
        in->shm = gxd_shm_region_ref(r->region);
        in->view.data = p;
        return GX_OK;
    }
    if (zmq_msg_init_size(&in->frame, nbytes) != 0) {
        zmq_msg_init(&in->frame);
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    memcpy(zmq_msg_data(&in->frame), p, nbytes);
    in->view.data = zmq_msg_data(&in->frame);
    j->bytes += nbytes;
    return GX_OK;
}

/* A GX_RING_CANCEL submission e (a copy): the job of submission index
 * e->target out of the queue (answered GX_ECANCELLED through the hooks)
 * or asked to stop; the cancel's own completion says which, or
 * GX_ENOTFOUND. The job gets one completion whichever way: a queued one
 * is taken out by one thread only, and a running one posts its own. */
static void s_cancel(gxd_ring *r, const gx_ring_sqe *e)
{
    gxd_rings *rs = r->owner;
    const uint64_t id = S_JOB_ID(r->serial, e->target);
    gx_ring_cqe c;
    memset(&c, 0, sizeof c);
    c.user = e->user;
    if (!rs->hooks.finished || !rs->hooks.cancel_running) {
        s_post_error(r, e->user, GX_EUNSUPPORTED, "ring: this daemon cannot cancel ring jobs");
        return;
    }
    atomic_fetch_add(&rs->stats.cancels, 1);
    gxd_job *j = gxd_queue_remove(rs->queue, r->identity, r->identity_len, id);
    if (j) {
        j->t_end = gxd_now_us();
        gxd_job_fail(j, GX_ECANCELLED, "cancelled by the client while queued");
        rs->hooks.finished(rs->hooks.arg, j);
        snprintf(c.message, sizeof c.message, "cancelled while queued");
    } else if (rs->hooks.cancel_running(rs->hooks.arg, r->identity, r->identity_len, id)) {
        snprintf(c.message, sizeof c.message,
                 "cancellation requested; the job stops at its next step");
    } else {
        c.status = GX_ENOTFOUND;
        snprintf(c.message, sizeof c.message,
                 "ring: no queued or running job at submission %u (already answered?)",
                 e->target);
    }
    s_post(r, &c);
}

/* One submission (copied out of the ring) at index: a RUN job on the
 * queue, a cancel, or an error completion. */
static void s_submit(gxd_ring *r, const gx_ring_sqe *e, uint32_t index)
{
    char err[160];
    gxd_rings *rs = r->owner;
    if (e->op == GX_RING_CANCEL) {
        s_cancel(r, e);
        return;
    }
    atomic_fetch_add(&rs->stats.jobs, 1);
    if (e->op != GX_RING_RUN) {
        s_post_error(r, e->user, GX_EINVAL, "ring: unknown op (0: run, 1: cancel)");
        return;
    }
    gxd_job *j = gxd_job_new(GXD_JOB_RUN, r->identity, r->identity_len, S_JOB_ID(r->serial, index));
    int rc = j ? GX_OK : gx_errf(err, sizeof err, GX_ENOMEM, "out of memory");
    if (rc == GX_OK) {
        j->ring = s_ref(r);
        j->ring_user = e->user;
        j->has_uid = true; /* the region's owner: limits.uid_jobs counts ring jobs too */
        j->uid = r->region->uid;
        pthread_mutex_lock(&r->mu);
        if (e->slot < r->n_slots && r->slots[e->slot]) {
            j->model = gxd_model_ref(r->slots[e->slot]);
            /* a use, for the registry's LRU order, as a socket RUN's lookup */
            atomic_store_explicit(&j->model->last_used, gxd_now_us(), memory_order_relaxed);
        }
        pthread_mutex_unlock(&r->mu);
        if (!j->model)
            rc = gx_errf(err, sizeof err, GX_ENOTFOUND,
                         "ring: slot %u has no graph bound (RING_BIND it first)", e->slot);
    }
    if (rc == GX_OK && e->n_in > GX_RING_MAX_IO)
        rc = gx_errf(err, sizeof err, GX_EINVAL, "ring: %u inputs (at most %d)", e->n_in,
                     GX_RING_MAX_IO);
    if (rc == GX_OK && e->n_in && !(j->in = calloc(e->n_in, sizeof *j->in)))
        rc = gx_errf(err, sizeof err, GX_ENOMEM, "out of memory");
    for (uint32_t i = 0; rc == GX_OK && i < e->n_in; i++)
        rc = s_input(r, j, &e->in[i], i, err, sizeof err);
    void *p;
    if (rc == GX_OK && e->out_offset < r->data_off)
        rc = gx_errf(err, sizeof err, GX_EINVAL,
                     "ring: the output area at %llu lies in the ring itself (data starts at %llu)",
                     (unsigned long long)e->out_offset, (unsigned long long)r->data_off);
    if (rc == GX_OK &&
        (rc = gxd_shm_slice(r->region, e->out_offset, e->out_bytes, &p, err, sizeof err)) == GX_OK) {
        j->out_shm = gxd_shm_region_ref(r->region);
        j->out_shm_offset = e->out_offset;
        j->out_shm_bytes = e->out_bytes;
    }
    if (rc == GX_OK)
        rc = gxd_job_set_urgency(j, "ring", e->priority, e->deadline_ms,
                                 atomic_load(&rs->max_priority), r->elevated,
                                 " (the uid of the connection that opened the ring)", err,
                                 sizeof err);
    if (rc == GX_OK) {
        j->mode = GX_MODE_AUTO;
        j->team = atomic_load_explicit(&j->model->team, memory_order_relaxed);
        j->t_enqueue = gxd_now_us();
        rc = gxd_queue_push(rs->queue, j, err, sizeof err);
        if (rc == GX_OK)
            return; /* the worker's result comes back through gxd_ring_post */
    }
    gxd_job_destroy(&j);
    s_post_error(r, e->user, rc, err);
}

/* The ring broke its own rules: it is closed, and its client learns it
 * from the next call that needs it (RING_* answers GX_EPROTO... or
 * completions stop; the client library then falls back to the socket). */
static void s_hostile(gxd_ring *r)
{
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->owner->stats.hostile, 1);
}

static void *s_thread(void *arg)
{
    gxd_ring *r = arg;
    gx_ring_hdr *h = r->hdr;
    int64_t idle_since = 0;
    unsigned spins = 0;
    while (!atomic_load(&r->stop)) {
        uint32_t tail = atomic_load_explicit(&h->sq_tail, memory_order_acquire);
        uint32_t cq_head = atomic_load_explicit(&h->cq_head, memory_order_acquire);
        /* hostile indices: more submissions than slots, completions read
         * that were never written */
        if (tail - r->sq_head > r->entries || r->sq_head - cq_head > r->entries) {
            s_hostile(r);
            break;
        }
        if (tail != r->sq_head && r->sq_head - cq_head < r->entries) {
            gx_ring_sqe e;
            memcpy(&e, &r->sq[r->sq_head & r->mask], sizeof e); /* read once, then never */
            const uint32_t index = r->sq_head++;
            atomic_store_explicit(&h->sq_head, r->sq_head, memory_order_release);
            s_submit(r, &e, index);
            idle_since = 0;
            continue;
        }
        /* nothing to take: poll for S_SPIN_US, yielding (the worker that
         * runs the job just queued may be waiting for this core), then sleep */
        if (!idle_since) {
            idle_since = gxd_now_us();
            continue;
        }
        if ((++spins & 15) != 0 || gxd_now_us() - idle_since < S_SPIN_US) {
            sched_yield();
            continue;
        }
        uint32_t f = atomic_load(&h->sq_futex);
        atomic_store(&h->sq_sleep, 1);
        tail = atomic_load(&h->sq_tail);
        cq_head = atomic_load(&h->cq_head);
        if (!atomic_load(&r->stop) && (tail == r->sq_head || r->sq_head - cq_head == r->entries))
            gx_ring_futex_wait(&h->sq_futex, f, S_SLEEP_US);
        atomic_store(&h->sq_sleep, 0);
        idle_since = 0;
    }
    return NULL;
}

int gxd_ring_open(gxd_rings *rs, gxd_shm_region *region, const void *identity,
                  size_t identity_len, bool elevated, char *err, size_t errlen)
{
    size_t mine = 0;
    for (gxd_ring *o = rs->head; o; o = o->next) {
        if (o->region == region)
            return gx_errf(err, errlen, GX_EBUSY,
                           "RING_OPEN: region '%s' has a ring already (RING_CLOSE it first)",
                           region->name);
        mine += s_mine(o, identity, identity_len);
    }
    if (mine >= GXD_RING_PER_CLIENT || rs->n >= GXD_RING_MAX)
        return gx_errf(err, errlen, GX_ELIMIT,
                       "RING_OPEN: %zu rings for this client, %zu in the daemon (at most %d "
                       "and %d)", mine, rs->n, GXD_RING_PER_CLIENT, GXD_RING_MAX);
    void *p;
    int rc = gxd_shm_slice(region, 0, sizeof(gx_ring_hdr), &p, err, errlen);
    if (rc < 0)
        return rc;
    uint32_t magic, entries; /* read once */
    memcpy(&magic, (const char *)p + offsetof(gx_ring_hdr, magic), sizeof magic);
    memcpy(&entries, (const char *)p + offsetof(gx_ring_hdr, entries), sizeof entries);
    if (magic != GX_RING_MAGIC || entries == 0 || entries > GX_RING_MAX_ENTRIES ||
        (entries & (entries - 1)))
        return gx_errf(err, errlen, GX_EINVAL,
                       "RING_OPEN: region '%s' does not start with a ring header (magic %#x, "
                       "entries %u: a power of two up to %d)", region->name, magic, entries,
                       GX_RING_MAX_ENTRIES);
    uint64_t data_off = gx_ring_data_offset(entries);
    if ((rc = gxd_shm_slice(region, 0, data_off, &p, err, errlen)) < 0)
        return rc;
    gxd_ring *r = calloc(1, sizeof *r);
    if (!r)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    r->owner = rs;
    r->region = gxd_shm_region_ref(region);
    memcpy(r->identity, identity, identity_len);
    r->identity_len = identity_len;
    r->entries = entries;
    r->mask = entries - 1;
    r->elevated = elevated;
    r->serial = rs->serials++;
    r->data_off = data_off;
    r->hdr = p;
    r->sq = (gx_ring_sqe *)((char *)p + gx_ring_sq_offset());
    r->cq = (gx_ring_cqe *)((char *)p + gx_ring_cq_offset(entries));
    /* the client's indices as they are now: the ring starts there */
    r->sq_head = atomic_load(&r->hdr->sq_tail);
    r->posted = r->sq_head;
    atomic_store(&r->hdr->sq_head, r->sq_head);
    atomic_store(&r->hdr->cq_tail, r->posted);
    atomic_store(&r->hdr->cq_head, r->posted);
    pthread_mutex_init(&r->mu, NULL);
    atomic_init(&r->refs, 1); /* the table's */
    atomic_init(&r->stop, false);
    if (pthread_create(&r->thread, NULL, s_thread, r) != 0) {
        s_release(&r);
        return gx_errf(err, errlen, GX_ENOMEM, "RING_OPEN: cannot start a thread");
    }
    r->running = true;
    r->next = rs->head;
    rs->head = r;
    rs->n++;
    atomic_fetch_add(&rs->stats.opened, 1);
    return GX_OK;
}

static gxd_ring *s_find(gxd_rings *rs, const void *identity, size_t identity_len,
                        const char *name)
{
    for (gxd_ring *r = rs->head; r; r = r->next)
        if (s_mine(r, identity, identity_len) && strcmp(r->region->name, name) == 0)
            return r;
    return NULL;
}

int gxd_ring_bind(gxd_rings *rs, const void *identity, size_t identity_len, const char *name,
                  struct gxd_model *model, uint32_t *slot, char *err, size_t errlen)
{
    gxd_ring *r = s_find(rs, identity, identity_len, name);
    int rc = GX_OK;
    if (!r) {
        gxd_model_release(&model);
        return gx_errf(err, errlen, GX_ENOTFOUND,
                       "RING_BIND: this client has no ring in region '%s' (RING_OPEN it)", name);
    }
    pthread_mutex_lock(&r->mu);
    uint32_t k = 0, hole = r->n_slots;
    while (k < r->n_slots && r->slots[k] != model) {
        if (!r->slots[k] && hole == r->n_slots)
            hole = k; /* its graph was evicted */
        k++;
    }
    if (k == r->n_slots)
        k = hole;
    if (r->closed)
        rc = gx_errf(err, errlen, GX_EPROTO,
                     "RING_BIND: the ring in region '%s' was closed: its indices broke the "
                     "ring's rules (RING_CLOSE it and open a new one)", name);
    else if (k == GX_RING_MAX_SLOTS)
        rc = gx_errf(err, errlen, GX_ELIMIT, "RING_BIND: the ring has %d graphs bound, its most",
                     GX_RING_MAX_SLOTS);
    else if (!r->slots[k] || k == r->n_slots) {
        atomic_fetch_add(&model->ring_binds, 1);
        r->slots[k] = gxd_model_ref(model);
        r->n_slots += k == r->n_slots;
    }
    pthread_mutex_unlock(&r->mu);
    gxd_model_release(&model);
    *slot = k;
    return rc;
}

void gxd_rings_unbind(void *arg, struct gxd_model *model)
{
    gxd_rings *rs = arg;
    for (gxd_ring *r = rs->head; r; r = r->next) {
        pthread_mutex_lock(&r->mu);
        for (uint32_t i = 0; i < r->n_slots; i++)
            if (r->slots[i] == model)
                s_unslot(r, i);
        pthread_mutex_unlock(&r->mu);
    }
}

/* Stops r's thread (it takes no more submissions) and joins it. */
static void s_stop(gxd_ring *r)
{
    if (!r->running)
        return;
    atomic_store(&r->stop, true);
    atomic_fetch_add(&r->hdr->sq_futex, 1);
    gx_ring_futex_wake(&r->hdr->sq_futex);
    pthread_join(r->thread, NULL);
    r->running = false;
}

/* Stops r's thread, unlinks it from the table (*pp) and drops the table's
 * reference; completions still to come are dropped. */
static void s_close(gxd_rings *rs, gxd_ring **pp)
{
    gxd_ring *r = *pp;
    *pp = r->next;
    rs->n--;
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_mutex_unlock(&r->mu);
    s_stop(r);
    atomic_fetch_add(&rs->stats.closed, 1);
    s_release(&r);
}

size_t gxd_ring_close(gxd_rings *rs, const void *identity, size_t identity_len,
                      const char *name)
{
    size_t n = 0;
    for (gxd_ring **pp = &rs->head; *pp;) {
        if (s_mine(*pp, identity, identity_len) && (!name || strcmp((*pp)->region->name, name) == 0)) {
            s_close(rs, pp);
            n++;
        } else {
            pp = &(*pp)->next;
        }
    }
    return n;
}

size_t gxd_rings_drop_client(gxd_rings *rs, const void *identity, size_t identity_len)
{
    return gxd_ring_close(rs, identity, identity_len, NULL);
}

void gxd_rings_stop(gxd_rings *rs)
{
    for (gxd_ring *r = rs->head; r; r = r->next)
        s_stop(r);
}

void gxd_rings_fini(gxd_rings *rs)
{
    while (rs->head)
        s_close(rs, &rs->head);
}

size_t gxd_rings_count(const gxd_rings *rs)
{
    return rs->n;
}

gxd_ring *gxd_job_ring(const gxd_job *j)
{
    return j->ring;
}

void gxd_ring_release(gxd_ring **r)
{
    s_release(r);
}

void gxd_ring_post(gxd_job *j)
{
    gxd_ring *r = j->ring;
    gx_ring_cqe c;
    memset(&c, 0, sizeof c);
    c.user = j->ring_user;
    c.status = j->status;
    c.queue_us = gxd_job_queue_us(j);
    c.compute_us = gxd_job_compute_us(j);
    c.compile_us = j->compile_us;
    c.device_us = j->device_us;
    c.workers = j->workers;
    c.replicas = j->replicas;
    c.batched = j->batched;
    memcpy(c.est_us, j->est_us, sizeof c.est_us);
    snprintf(c.mode, sizeof c.mode, "%s", gx_mode_name(j->ran_mode));
    snprintf(c.device, sizeof c.device, "%s", gxd_job_device(j));
    snprintf(c.reason, sizeof c.reason, "%s", j->reason);
    if (c.status == GX_OK && j->n_out > GX_RING_MAX_IO) {
        c.status = gx_errf(c.message, sizeof c.message, GX_EUNSUPPORTED,
                           "ring: the graph has %zu outputs, the ring carries %d (use the socket)",
                           j->n_out, GX_RING_MAX_IO);
        c.flags |= GX_RING_CQE_SOCKET;
    }
    for (size_t i = 0; c.status == GX_OK && i < j->n_out; i++) {
        gxd_job_output *o = &j->out[i];
        gx_ring_tensor *t = &c.out[i];
        if (o->value || strlen(o->name) >= sizeof t->name) {
            c.status = gx_errf(c.message, sizeof c.message, GX_EUNSUPPORTED,
                               "ring: output '%.40s' is not a tensor of numbers with a name of "
                               "at most %d bytes (use the socket)", o->name, GX_RING_NAME - 1);
            c.flags |= GX_RING_CQE_SOCKET;
            break;
        }
        if (!o->in_shm) { /* it did not go to the area in the run (a merged batch): copy */
            uintptr_t end = (uintptr_t)j->out_shm->base + j->out_shm_offset + j->out_shm_used;
            uint64_t at = j->out_shm_used + (64 - end % 64) % 64;
            if (at > j->out_shm_bytes || o->nbytes > j->out_shm_bytes - at) {
                c.status = gx_errf(c.message, sizeof c.message, GX_ELIMIT,
                                   "ring: the outputs need more than the %llu bytes of the "
                                   "output area", (unsigned long long)j->out_shm_bytes);
                c.flags |= GX_RING_CQE_SOCKET;
                break;
            }
            memcpy((char *)j->out_shm->base + j->out_shm_offset + at, o->view.data, o->nbytes);
            j->out_shm_used = at + o->nbytes;
            o->shm_offset = j->out_shm_offset + at;
        }
        snprintf(t->name, sizeof t->name, "%s", o->name);
        t->offset = o->shm_offset;
        t->bytes = o->nbytes;
        t->dtype = o->view.dtype;
        t->ndim = o->view.ndim;
        memcpy(t->shape, o->view.shape, sizeof t->shape);
        c.n_out = (uint32_t)i + 1;
    }
    if (c.status != GX_OK) {
        c.n_out = 0;
        if (!c.message[0])
            snprintf(c.message, sizeof c.message, "%.150s", j->message);
        atomic_fetch_add(&r->owner->stats.refused, c.status != j->status);
    }
    s_post(r, &c);
}
