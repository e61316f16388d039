/*
 * The job queue: highest priority first; within a priority, clients take
 * turns (fair queuing by virtual time: a client's next job is tagged one
 * past the later of the queue's clock and that client's previous tag, so a
 * client that queued 1000 jobs does not make a newcomer wait for all of
 * them), and each client's jobs keep their arrival order; bounded in jobs
 * and in input bytes (a push beyond either fails at once
 * with GX_EQUEUEFULL, nobody blocks); deadlines swept by the I/O thread;
 * removal by (client, correlation id) for cancellation. Thread-safe: the I/O
 * thread pushes, sweeps and removes, workers pop.
 *
 * Dynamic batching (daemon/batcher.h): a worker may also take the queued
 * jobs like the one it took (gxd_queue_take_like). Those are "held" until
 * it releases each (it ran) or puts it back (it will not merge it): a held
 * job is no longer queued, but a cancel still reaches it
 * (gxd_queue_cancel_held*), which the worker sees in its cancel flag. A
 * job gxd_queue_pop_or returns is held too, until the worker releases it
 * once a cancel reaches it where the worker runs it (daemon/pool.c): from
 * the queue to the worker, a cancel never finds it nowhere.
 */
#ifndef GXD_QUEUE_H
#define GXD_QUEUE_H

#include <pthread.h>

#include "daemon/job.h"

/* A client with jobs in the queue. */
typedef struct gxd_queue_client {
    uint8_t identity[GXD_MAX_IDENTITY];
    size_t identity_len;
    uint64_t last_tag; /* tag of its latest queued job */
    size_t queued;
    bool has_uid; /* its jobs' uid (one connection: one uid) */
    uid_t uid;
} gxd_queue_client;

typedef struct gxd_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gxd_job **heap;
    size_t n, cap;
    size_t max_jobs, max_bytes, bytes;
    size_t max_client_jobs; /* queued jobs per client (limits.client_jobs); 0: none */
    size_t max_uid_jobs;    /* queued jobs per uid, its clients together (limits.uid_jobs); 0: none */
    uint64_t next_seq;
    uint64_t vtime; /* tag of the job popped last */
    gxd_queue_client *clients; /* the ones with queued jobs */
    size_t n_clients, cap_clients;
    bool closed;
    /* taken by a batch leader, not yet released or put back */
    gxd_job **held;
    size_t n_held, cap_held;
    pthread_cond_t batch_cv; /* broadcast on a push while a leader waits (batch_waiting) */
    int batch_waiting;
    /* pushes, kicks and the close, counted (changed under mu): what an
     * idle popper watches while it spins */
    atomic_uint_fast64_t posts;
    int64_t spin_us; /* how long a popper spins before it sleeps */
    atomic_int spinning; /* poppers spinning now */
    int sleeping; /* poppers in cv (under mu) */
    /* poppers woken for a job's team (gxd_job.team) that spin again when
     * they find no job: their wake-up overlaps the leader's (under mu) */
    atomic_int warm;
} gxd_queue;

int gxd_queue_init(gxd_queue *q, size_t max_jobs, size_t max_bytes);
/* New bounds (SIGHUP): jobs already queued stay; later pushes see them. */
void gxd_queue_set_bounds(gxd_queue *q, size_t max_jobs, size_t max_bytes);
/* Jobs one client may have queued (limits.client_jobs; 0: no bound but
 * max_jobs): a push beyond it fails at once with GX_ELIMIT, and other
 * clients' pushes go on. New bound: as gxd_queue_set_bounds. */
void gxd_queue_set_client_max(gxd_queue *q, size_t max_client_jobs);
/* Jobs the clients of one uid may have queued together (limits.uid_jobs;
 * 0: no bound per uid), counted over the jobs whose has_uid is set (ipc
 * clients, rings); a push beyond it fails at once with GX_ELIMIT. New
 * bound: as gxd_queue_set_bounds. */
void gxd_queue_set_uid_max(gxd_queue *q, size_t max_uid_jobs);
/* The queue must be empty (drained) and no worker waiting. */
void gxd_queue_fini(gxd_queue *q);
/* Enqueue; ownership moves in on GX_OK. GX_EQUEUEFULL, GX_ELIMIT (the
 * client's own bound) or GX_ESHUTDOWN (queue closed) with a message
 * otherwise; the caller keeps the job. */
int gxd_queue_push(gxd_queue *q, gxd_job *j, char *err, size_t errlen);
/* (A push wakes one sleeping popper, and j->team - 1 more while others
 * sleep: they spin for a team call, as after a job of their own.) */
/* An idle popper spins for up to us microseconds (0: never) watching for
 * a job or a kick before it sleeps on the condition variable: a job or
 * team call that comes within that time starts at once instead of after
 * a wake-up (tens of microseconds), at the price of that much of a core
 * after each job.
 * Before any popper waits. */
void gxd_queue_set_spin(gxd_queue *q, int64_t us);
/* Block until a job is available and take it (caller owns it), or return
 * NULL once the queue is closed. */
gxd_job *gxd_queue_pop(gxd_queue *q);
/* The same, the job held (see above: the caller releases it), but when
 * no job is queued, also returns NULL with *woken true
 * as soon as wake(arg) holds (checked under the queue's lock, so a thread
 * that makes it true and then calls gxd_queue_kick is never missed). A
 * queued job comes first: independent jobs are worth more than helping one
 * (seed 002's first rule). The pool uses it to recruit idle workers into a
 * team. *woken is false when a job or NULL (closed) is returned. */
gxd_job *gxd_queue_pop_or(gxd_queue *q, bool (*wake)(void *), void *arg, bool *woken);
/* Wake up to n waiting poppers so they re-check their wake condition. */
void gxd_queue_kick(gxd_queue *q, int n);
/* Take the queued job (identity, id) out, or NULL if it is not queued. */
gxd_job *gxd_queue_remove(gxd_queue *q, const void *identity, size_t identity_len, uint64_t id);
/* Take out every queued job of the client identity (it went away);
 * returns them as a list linked through job->next (caller owns them). */
gxd_job *gxd_queue_remove_client(gxd_queue *q, const void *identity, size_t identity_len);
/* Take out every job whose deadline is <= now; returns them as a list
 * linked through job->next (caller owns them). */
gxd_job *gxd_queue_expire(gxd_queue *q, int64_t now);
/* Earliest deadline among queued jobs, or 0 if none has one. */
int64_t gxd_queue_next_deadline(gxd_queue *q);
/* Close: wake every popper (they get NULL) and refuse further pushes.
 * Returns every queued job as a list (caller owns them). */
gxd_job *gxd_queue_close(gxd_queue *q);
size_t gxd_queue_len(gxd_queue *q);

/* Does queued job j go with lead's batch, n jobs already taken besides
 * lead? Called under the queue's lock: it must not call the queue. */
typedef bool (*gxd_queue_like_fn)(const gxd_job *lead, const gxd_job *j, size_t n, void *arg);
/* Take up to max queued jobs like(lead, j, taken so far, arg) holds for,
 * in queue order (the one that would be popped first, first), into out;
 * they are held from then on (see above). With fewer than max taken, wait
 * until until_us (CLOCK_MONOTONIC; <= now: never) for pushes of more, but
 * no longer once a job of higher priority than lead's is queued, or the
 * queue closes. Returns how many were taken (ENOMEM: those so far). */
size_t gxd_queue_take_like(gxd_queue *q, const gxd_job *lead, gxd_queue_like_fn like, void *arg,
                           gxd_job **out, size_t max, int64_t until_us);
/* Held job j ran, or failed: it is no longer held (caller owns it still). */
void gxd_queue_release(gxd_queue *q, gxd_job *j);
/* Held job j goes back into the queue where it was (its arrival order and
 * turn kept, the bounds not checked: it was counted before). GX_OK, or
 * GX_ESHUTDOWN (closed) / GX_ENOMEM, when the caller keeps it, released. */
int gxd_queue_putback(gxd_queue *q, gxd_job *j);
/* Set the cancel flag of the held job (identity, id); true if held. */
bool gxd_queue_cancel_held(gxd_queue *q, const void *identity, size_t identity_len, uint64_t id);
/* Set the cancel flag of every held job of the client (identity_len 0:
 * of every client); returns how many were not set before. */
int gxd_queue_cancel_held_client(gxd_queue *q, const void *identity, size_t identity_len);
/* Poppers spinning right now, or woken to spin for a job's team (a hint:
 * a kick reaches them at once, or as soon as they are up). */
int gxd_queue_spinning(gxd_queue *q);

#endif
