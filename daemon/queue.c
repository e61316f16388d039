/* Priority queue of jobs (binary heap). See queue.h. */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "daemon/queue.h"

int gxd_queue_init(gxd_queue *q, size_t max_jobs, size_t max_bytes)
{
    memset(q, 0, sizeof *q);
    q->max_jobs = max_jobs;
    q->max_bytes = max_bytes;
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        return GX_ENOMEM;
    if (pthread_cond_init(&q->cv, NULL) != 0) {
        pthread_mutex_destroy(&q->mu);
        return GX_ENOMEM;
    }
    pthread_condattr_t ca;
    bool ok = pthread_condattr_init(&ca) == 0;
    ok = ok && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(&q->batch_cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        return GX_ENOMEM;
    }
    return GX_OK;
}

void gxd_queue_fini(gxd_queue *q)
{
    free(q->heap);
    free(q->clients);
    free(q->held);
    pthread_cond_destroy(&q->batch_cv);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

/* a runs before b */
static bool s_before(const gxd_job *a, const gxd_job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return a->tag != b->tag ? a->tag < b->tag : a->seq < b->seq;
}

/* The client record of j's sender, or NULL (create: a new one; NULL on ENOMEM). */
static gxd_queue_client *s_client(gxd_queue *q, const gxd_job *j, bool create)
{
    for (size_t i = 0; i < q->n_clients; i++) {
        gxd_queue_client *c = &q->clients[i];
        if (c->identity_len == j->identity_len && memcmp(c->identity, j->identity, j->identity_len) == 0)
            return c;
    }
    if (!create || !gx_grow(&q->clients, &q->cap_clients, q->n_clients + 1, sizeof *q->clients))
        return NULL;
    gxd_queue_client *c = &q->clients[q->n_clients++];
    memset(c, 0, sizeof *c);
    memcpy(c->identity, j->identity, j->identity_len);
    c->identity_len = j->identity_len;
    c->has_uid = j->has_uid;
    c->uid = j->uid;
    return c;
}

/* Jobs queued by the clients of j's uid, all together (0 for a job with
 * no uid). The clients with queued jobs are few: a walk over them. */
static size_t s_uid_queued(const gxd_queue *q, const gxd_job *j)
{
    size_t n = 0;
    for (size_t i = 0; j->has_uid && i < q->n_clients; i++)
        if (q->clients[i].has_uid && q->clients[i].uid == j->uid)
            n += q->clients[i].queued;
    return n;
}

static void s_swap(gxd_queue *q, size_t i, size_t k)
{
    gxd_job *t = q->heap[i];
    q->heap[i] = q->heap[k];
    q->heap[k] = t;
}

static void s_up(gxd_queue *q, size_t i)
{
    while (i > 0 && s_before(q->heap[i], q->heap[(i - 1) / 2])) {
        s_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void s_down(gxd_queue *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && s_before(q->heap[l], q->heap[m]))
            m = l;
        if (r < q->n && s_before(q->heap[r], q->heap[m]))
            m = r;
        if (m == i)
            return;
        s_swap(q, i, m);
        i = m;
    }
}

/* Remove heap[i]; caller holds the lock. */
static gxd_job *s_take(gxd_queue *q, size_t i)
{
    gxd_job *j = q->heap[i];
    q->heap[i] = q->heap[--q->n];
    if (i < q->n) {
        s_down(q, i);
        s_up(q, i);
    }
    q->bytes -= j->bytes;
    j->next = NULL;
    gxd_queue_client *c = s_client(q, j, false);
    if (c && --c->queued == 0)
        *c = q->clients[--q->n_clients]; /* forget idle clients */
    return j;
}

int gxd_queue_push(gxd_queue *q, gxd_job *j, char *err, size_t errlen)
{
    int rc = GX_OK;
    pthread_mutex_lock(&q->mu);
    if (q->closed)
        rc = gx_errf(err, errlen, GX_ESHUTDOWN, "the daemon is shutting down");
    else if (q->n >= q->max_jobs)
        rc = gx_errf(err, errlen, GX_EQUEUEFULL,
                     "job queue full (%zu jobs queued, queue.max_jobs = %zu); retry later",
                     q->n, q->max_jobs);
    else if (j->bytes > q->max_bytes - q->bytes)
        rc = gx_errf(err, errlen, GX_EQUEUEFULL,
                     "job queue full (%zu input bytes queued + %zu > queue.max_bytes = %zu); retry later",
                     q->bytes, j->bytes, q->max_bytes);
    gxd_queue_client *c = rc == GX_OK && q->max_client_jobs ? s_client(q, j, false) : NULL;
    if (c && c->queued >= q->max_client_jobs)
        rc = gx_errf(err, errlen, GX_ELIMIT,
                     "this client has %zu jobs queued and limits.client_jobs is %zu; wait for "
                     "replies before sending more",
                     c->queued, q->max_client_jobs);
    size_t uq = rc == GX_OK && q->max_uid_jobs ? s_uid_queued(q, j) : 0;
    if (uq && uq >= q->max_uid_jobs)
        rc = gx_errf(err, errlen, GX_ELIMIT,
                     "uid %lu has %zu jobs queued over all its connections and limits.uid_jobs "
                     "is %zu; wait for replies before sending more",
                     (unsigned long)j->uid, uq, q->max_uid_jobs);
    if (rc == GX_OK && (!gx_grow(&q->heap, &q->cap, q->n + 1, sizeof *q->heap) ||
                        !(c = s_client(q, j, true))))
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory queueing the job");
    if (rc == GX_OK) {
        j->seq = q->next_seq++;
        j->tag = (c->last_tag > q->vtime ? c->last_tag : q->vtime) + 1;
        c->last_tag = j->tag;
        c->queued++;
        q->heap[q->n++] = j;
        q->bytes += j->bytes;
        s_up(q, q->n - 1);
        atomic_fetch_add_explicit(&q->posts, 1, memory_order_release);
        pthread_cond_signal(&q->cv);
        for (int k = 1; k < j->team && q->warm + 1 < q->sleeping; k++) {
            q->warm++;
            pthread_cond_signal(&q->cv);
        }
        if (q->batch_waiting)
            pthread_cond_broadcast(&q->batch_cv);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

gxd_job *gxd_queue_pop(gxd_queue *q)
{
    bool woken;
    gxd_job *j = gxd_queue_pop_or(q, NULL, NULL, &woken);
    if (j)
        gxd_queue_release(q, j);
    return j;
}

void gxd_queue_set_bounds(gxd_queue *q, size_t max_jobs, size_t max_bytes)
{
    pthread_mutex_lock(&q->mu);
    q->max_jobs = max_jobs;
    q->max_bytes = max_bytes;
    pthread_mutex_unlock(&q->mu);
}

void gxd_queue_set_client_max(gxd_queue *q, size_t max_client_jobs)
{
    pthread_mutex_lock(&q->mu);
    q->max_client_jobs = max_client_jobs;
    pthread_mutex_unlock(&q->mu);
}

void gxd_queue_set_uid_max(gxd_queue *q, size_t max_uid_jobs)
{
    pthread_mutex_lock(&q->mu);
    q->max_uid_jobs = max_uid_jobs;
    pthread_mutex_unlock(&q->mu);
}

void gxd_queue_set_spin(gxd_queue *q, int64_t us)
{
    pthread_mutex_lock(&q->mu);
    q->spin_us = us > 0 ? us : 0;
    pthread_mutex_unlock(&q->mu);
}

/* Spin (mu not held) until posts moves past seen or wake(arg) holds
 * (true), or q->spin_us have passed (false). */
static bool s_spin(gxd_queue *q, uint_fast64_t seen, bool (*wake)(void *), void *arg)
{
    const int64_t end = gxd_now_us() + q->spin_us;
    atomic_fetch_add_explicit(&q->spinning, 1, memory_order_relaxed);
    bool hit = false;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&q->posts, memory_order_acquire) != seen || (wake && wake(arg))) {
            hit = true;
            break;
        }
        /* yield: the I/O thread shares these cores, and must not wait for
         * a spinning worker to get the request that would end the spin */
        sched_yield();
        if (i % 16 == 0 && gxd_now_us() >= end)
            break;
    }
    atomic_fetch_sub_explicit(&q->spinning, 1, memory_order_relaxed);
    return hit;
}

int gxd_queue_spinning(gxd_queue *q)
{
    return atomic_load_explicit(&q->spinning, memory_order_relaxed) +
           atomic_load_explicit(&q->warm, memory_order_relaxed);
}

gxd_job *gxd_queue_pop_or(gxd_queue *q, bool (*wake)(void *), void *arg, bool *woken)
{
    gxd_job *j = NULL;
    bool spun = false;
    *woken = false;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        if (q->closed)
            break;
        if (q->n) {
            j = s_take(q, 0);
            if (j->tag > q->vtime)
                q->vtime = j->tag;
            /* held until its worker has it (gxd_queue_release): a cancel
             * in between finds it (without the memory, a cancel then
             * finds nothing: "not found") */
            if (gx_grow(&q->held, &q->cap_held, q->n_held + 1, sizeof *q->held))
                q->held[q->n_held++] = j;
            break;
        }
        if (wake && wake(arg)) {
            *woken = true;
            break;
        }
        if (!spun && q->spin_us) { /* once per pop; then the conditions again, under mu */
            const uint_fast64_t seen = atomic_load_explicit(&q->posts, memory_order_relaxed);
            spun = true;
            pthread_mutex_unlock(&q->mu);
            s_spin(q, seen, wake, arg);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        q->sleeping++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->sleeping--;
        if (q->warm > 0 && !q->n) { /* woken for a team (whichever popper: they are alike) */
            q->warm--;
            spun = false;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return j;
}

void gxd_queue_kick(gxd_queue *q, int n)
{
    pthread_mutex_lock(&q->mu);
    atomic_fetch_add_explicit(&q->posts, 1, memory_order_release);
    for (int i = 0; i < n; i++)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

gxd_job *gxd_queue_remove(gxd_queue *q, const void *identity, size_t identity_len, uint64_t id)
{
    gxd_job *j = NULL;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n; i++) {
        const gxd_job *c = q->heap[i];
        if (c->id == id && c->identity_len == identity_len &&
            memcmp(c->identity, identity, identity_len) == 0) {
            j = s_take(q, i);
            break;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return j;
}

gxd_job *gxd_queue_remove_client(gxd_queue *q, const void *identity, size_t identity_len)
{
    gxd_job *list = NULL, **tail = &list;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n;) {
        const gxd_job *c = q->heap[i];
        if (c->identity_len == identity_len && memcmp(c->identity, identity, identity_len) == 0) {
            gxd_job *j = s_take(q, i);
            *tail = j;
            tail = &j->next;
            i = 0; /* the heap moved; rescan */
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return list;
}

gxd_job *gxd_queue_expire(gxd_queue *q, int64_t now)
{
    gxd_job *list = NULL;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n;) {
        if (q->heap[i]->deadline_us && q->heap[i]->deadline_us <= now) {
            gxd_job *j = s_take(q, i);
            j->next = list;
            list = j;
            i = 0; /* the heap moved; rescan (expiries are rare) */
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return list;
}

int64_t gxd_queue_next_deadline(gxd_queue *q)
{
    int64_t d = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n; i++)
        if (q->heap[i]->deadline_us && (!d || q->heap[i]->deadline_us < d))
            d = q->heap[i]->deadline_us;
    pthread_mutex_unlock(&q->mu);
    return d;
}

gxd_job *gxd_queue_close(gxd_queue *q)
{
    gxd_job *list = NULL;
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    atomic_fetch_add_explicit(&q->posts, 1, memory_order_release);
    while (q->n > 0) {
        gxd_job *j = s_take(q, q->n - 1);
        j->next = list;
        list = j;
    }
    pthread_cond_broadcast(&q->cv);
    pthread_cond_broadcast(&q->batch_cv);
    pthread_mutex_unlock(&q->mu);
    return list;
}

size_t gxd_queue_len(gxd_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Index of the first queued job like lead's batch, or q->n; under mu. */
static size_t s_first_like(gxd_queue *q, const gxd_job *lead, gxd_queue_like_fn like, void *arg,
                           size_t n)
{
    size_t best = q->n;
    for (size_t i = 0; i < q->n; i++)
        if ((best == q->n || s_before(q->heap[i], q->heap[best])) && like(lead, q->heap[i], n, arg))
            best = i;
    return best;
}

size_t gxd_queue_take_like(gxd_queue *q, const gxd_job *lead, gxd_queue_like_fn like, void *arg,
                           gxd_job **out, size_t max, int64_t until_us)
{
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    while (n < max && !q->closed) {
        size_t i = s_first_like(q, lead, like, arg, n);
        if (i < q->n) {
            if (!gx_grow(&q->held, &q->cap_held, q->n_held + 1, sizeof *q->held))
                break;
            gxd_job *j = s_take(q, i);
            if (j->tag > q->vtime)
                q->vtime = j->tag;
            q->held[q->n_held++] = j;
            out[n++] = j;
            continue;
        }
        /* nothing more like it: wait for pushes, unless it is time, or a
         * job that goes before lead's is waiting */
        int64_t now = gxd_now_us();
        if (now >= until_us || (q->n && q->heap[0]->priority > lead->priority))
            break;
        struct timespec ts = {.tv_sec = until_us / 1000000, .tv_nsec = until_us % 1000000 * 1000};
        q->batch_waiting++;
        pthread_cond_timedwait(&q->batch_cv, &q->mu, &ts);
        q->batch_waiting--;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Forget held job j; under mu. False if it was not held. */
static bool s_unhold(gxd_queue *q, const gxd_job *j)
{
    for (size_t i = 0; i < q->n_held; i++)
        if (q->held[i] == j) {
            q->held[i] = q->held[--q->n_held];
            return true;
        }
    return false;
}

void gxd_queue_release(gxd_queue *q, gxd_job *j)
{
    pthread_mutex_lock(&q->mu);
    s_unhold(q, j);
    pthread_mutex_unlock(&q->mu);
}

int gxd_queue_putback(gxd_queue *q, gxd_job *j)
{
    int rc = GX_OK;
    pthread_mutex_lock(&q->mu);
    s_unhold(q, j);
    gxd_queue_client *c = NULL;
    if (q->closed)
        rc = GX_ESHUTDOWN;
    else if (!gx_grow(&q->heap, &q->cap, q->n + 1, sizeof *q->heap) || !(c = s_client(q, j, true)))
        rc = GX_ENOMEM;
    if (rc == GX_OK) {
        /* seq and tag as it had them: it goes back to its turn */
        if (c->last_tag < j->tag)
            c->last_tag = j->tag;
        c->queued++;
        q->heap[q->n++] = j;
        q->bytes += j->bytes;
        s_up(q, q->n - 1);
        atomic_fetch_add_explicit(&q->posts, 1, memory_order_release);
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

bool gxd_queue_cancel_held(gxd_queue *q, const void *identity, size_t identity_len, uint64_t id)
{
    bool found = false;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n_held && !found; i++) {
        gxd_job *j = q->held[i];
        if (j->id == id && j->identity_len == identity_len &&
            memcmp(j->identity, identity, identity_len) == 0) {
            atomic_store(&j->cancel, true);
            found = true;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return found;
}

int gxd_queue_cancel_held_client(gxd_queue *q, const void *identity, size_t identity_len)
{
    int n = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < q->n_held; i++) {
        gxd_job *j = q->held[i];
        if (identity_len == 0 ||
            (j->identity_len == identity_len && memcmp(j->identity, identity, identity_len) == 0))
            n += !atomic_exchange(&j->cancel, true);
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}
