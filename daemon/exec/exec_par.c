/*
 * The parallel executors (seed 002), one engine for every mode: a team of
 * workers (daemon/team.h) runs the steps of one or more frames (replicas:
 * each its own plan and arena) from a shared ready queue.
 *
 * - A step becomes ready when the steps before it are done: its producers
 *   (dag: inter-op, the frame must use the DAG layout) or simply the step
 *   before it (step order: seq, intra, replicas).
 * - A ready step is cut into cfg->workers shares when cfg->split is set and
 *   it is heavy (intra-op; kernels split their work by ith/nth); else it is
 *   one share. Members claim shares from the head of the queue; whoever
 *   finishes a step's last share releases the steps waiting for it. That
 *   is the one synchronisation per split node.
 * - A member with nothing to claim spins for at most GXD_SPIN_US, then
 *   sleeps on the queue's condition variable.
 * - The first error, cancel or deadline stops every member from claiming
 *   more; shares already running finish.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "daemon/job.h"
#include "daemon/team.h"

/* Longest a member spins for work before it sleeps. */
#define GXD_SPIN_US 50

typedef struct par_step {
    atomic_int pending;  /* steps it still waits for */
    atomic_int left;     /* shares not finished */
    int shares;          /* 1, or cfg->workers when split */
    int next_share;      /* next share to claim, guarded by par.mu */
    _Atomic int64_t ns;  /* time of its shares, summed */
    gx_coop coop;        /* what its shares hold in common (gx_kargs.coop) */
} par_step;

typedef struct par_item {
    int frame, step;
} par_item;

typedef struct par {
    const gxd_par_cfg *cfg;
    gxd_frame *frames;
    int n_frames;
    par_step **st; /* [frame][step] */
    bool timed;    /* record step times in the plans' stats */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    par_item *ready; /* steps are queued once each: no wrap-around */
    size_t head, tail;
    atomic_size_t n_ready;
    atomic_size_t remaining; /* steps not finished, every frame */
    atomic_bool stop;
    int sleepers; /* guarded by mu */
    int rc;       /* first failure, guarded by mu */
    char *err;
    size_t errlen;
} par;

static bool s_runs(const gxd_step *s)
{
    return !s->folded;
}

/* The step after s in step order that runs, or -1. */
static int s_next_in_order(const gxd_plan *p, int s)
{
    for (size_t t = (size_t)s + 1; t < p->n_steps; t++)
        if (s_runs(&p->steps[t]))
            return (int)t;
    return -1;
}

static bool s_split(const par *r, const gxd_plan *p, size_t s)
{
    const gxd_step *st = &p->steps[s];
    return r->cfg->split && r->cfg->workers > 1 && st->kernel && !st->dynamic &&
           p->devices[st->device]->shares &&
           gxd_step_cost_us(p, s) >= r->cfg->split_min_us;
}

/* Queue a ready step (mu held); wake as many sleepers as it has shares. */
static void s_push_locked(par *r, int frame, int step)
{
    r->ready[r->tail++] = (par_item){frame, step};
    atomic_fetch_add_explicit(&r->n_ready, 1, memory_order_release);
    if (r->st[frame][step].shares > 1)
        pthread_cond_broadcast(&r->cv);
    else if (r->sleepers)
        pthread_cond_signal(&r->cv);
}

static void s_fail(par *r, int rc, const char *msg)
{
    pthread_mutex_lock(&r->mu);
    if (r->rc == GX_OK) {
        r->rc = rc;
        snprintf(r->err, r->errlen, "%s", msg);
    }
    atomic_store(&r->stop, true);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Step s of frame fi finished: release the steps waiting for it. */
static void s_finish(par *r, int fi, int s)
{
    const gxd_plan *p = r->frames[fi].plan;
    par_step *ps = &r->st[fi][s];
    if (r->timed && ps->shares >= 1)
        gxd_step_record(p, (size_t)s, atomic_load_explicit(&ps->ns, memory_order_relaxed));
    const gxd_step *st = &p->steps[s];
    int next = -1;
    const int *succ = st->succ;
    int n_succ = st->n_succ;
    if (!r->cfg->dag) {
        next = s_next_in_order(p, s);
        succ = &next;
        n_succ = next >= 0;
    }
    bool pushed = false;
    for (int k = 0; k < n_succ; k++)
        if (atomic_fetch_sub_explicit(&r->st[fi][succ[k]].pending, 1, memory_order_acq_rel) == 1) {
            if (!pushed)
                pthread_mutex_lock(&r->mu);
            pushed = true;
            s_push_locked(r, fi, succ[k]);
        }
    if (pushed)
        pthread_mutex_unlock(&r->mu);
    if (atomic_fetch_sub_explicit(&r->remaining, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
}

/* Claim a share (mu held, queue not empty). */
static par_item s_claim_locked(par *r, int *share)
{
    par_item it = r->ready[r->head];
    par_step *ps = &r->st[it.frame][it.step];
    *share = ps->next_share++;
    if (ps->next_share == ps->shares) {
        r->head++;
        atomic_fetch_sub_explicit(&r->n_ready, 1, memory_order_relaxed);
    }
    return it;
}

static void s_run_share(par *r, par_item it, int share)
{
    gxd_frame f = r->frames[it.frame]; /* own copy: its own error buffer */
    char err[1024] = "";
    f.err = err;
    f.errlen = sizeof err;
    par_step *ps = &r->st[it.frame][it.step];
    int rc = share == 0 ? gxd_exec_should_stop(f.stop) : GX_OK;
    int64_t t0 = r->timed ? gxd_now_ns() : 0;
    if (rc == GX_OK)
        rc = gxd_exec_step_share(&f, (size_t)it.step, share, ps->shares, &ps->coop);
    if (r->timed)
        atomic_fetch_add_explicit(&ps->ns, gxd_now_ns() - t0, memory_order_relaxed);
    if (rc < 0) {
        s_fail(r, rc, err[0] ? err : gx_strerror(rc));
        return;
    }
    if (atomic_fetch_sub_explicit(&ps->left, 1, memory_order_acq_rel) == 1)
        s_finish(r, it.frame, it.step);
}

static bool s_over(par *r)
{
    return atomic_load_explicit(&r->stop, memory_order_acquire) ||
           atomic_load_explicit(&r->remaining, memory_order_acquire) == 0;
}

/* Every member, the leader included: claim and run shares until done. */
static void s_member(void *arg, int member)
{
    par *r = arg;
    (void)member;
    while (!s_over(r)) {
        pthread_mutex_lock(&r->mu);
        if (r->head < r->tail && !atomic_load(&r->stop)) {
            int share;
            par_item it = s_claim_locked(r, &share);
            pthread_mutex_unlock(&r->mu);
            s_run_share(r, it, share);
            continue;
        }
        pthread_mutex_unlock(&r->mu);
        int64_t until = gxd_now_ns() + GXD_SPIN_US * 1000;
        for (unsigned i = 1; !s_over(r); i++) {
            if (atomic_load_explicit(&r->n_ready, memory_order_acquire))
                break;
            GXD_CPU_PAUSE();
            if (i % 64 == 0 && gxd_now_ns() > until) {
                pthread_mutex_lock(&r->mu);
                r->sleepers++;
                while (r->head == r->tail && !s_over(r))
                    pthread_cond_wait(&r->cv, &r->mu);
                r->sleepers--;
                pthread_mutex_unlock(&r->mu);
                break;
            }
        }
    }
}

int gxd_exec_par(gxd_team *team, const gxd_par_cfg *cfg, gxd_frame *frames, int n_frames,
                 int *members, char *err, size_t errlen)
{
    *members = 1;
    if (n_frames == 1 && cfg->workers <= 1) {
        int rc = gxd_exec_seq(&frames[0]);
        if (rc < 0 && frames[0].err != err)
            snprintf(err, errlen, "%s", frames[0].err);
        return rc;
    }
    par r = {.cfg = cfg, .frames = frames, .n_frames = n_frames, .err = err, .errlen = errlen};
    size_t total = 0;
    int rc = GX_OK;
    for (int fi = 0; fi < n_frames; fi++)
        total += frames[fi].plan->n_steps;
    r.ready = malloc((total + 1) * sizeof *r.ready);
    r.st = calloc((size_t)n_frames, sizeof *r.st);
    if (!r.ready || !r.st) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    for (int fi = 0; fi < n_frames; fi++) {
        const gxd_plan *p = frames[fi].plan;
        if (!(r.st[fi] = calloc(p->n_steps + 1, sizeof *r.st[fi]))) {
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
        r.timed = r.timed || gxd_plan_wants_timing(p);
    }
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    size_t runs = 0;
    for (int fi = 0; fi < n_frames; fi++) {
        const gxd_plan *p = frames[fi].plan;
        bool first = true;
        for (size_t s = 0; s < p->n_steps; s++) {
            if (!s_runs(&p->steps[s]))
                continue;
            par_step *ps = &r.st[fi][s];
            ps->shares = s_split(&r, p, s) ? cfg->workers : 1;
            atomic_init(&ps->left, ps->shares);
            atomic_init(&ps->ns, 0);
            atomic_init(&ps->coop.next, 0);
            atomic_init(&ps->coop.done, 0);
            int pending = cfg->dag ? p->steps[s].n_preds : !first;
            atomic_init(&ps->pending, pending);
            if (!pending)
                r.ready[r.tail++] = (par_item){fi, (int)s};
            first = false;
            runs++;
        }
    }
    atomic_init(&r.n_ready, r.tail);
    atomic_init(&r.remaining, runs);
    atomic_init(&r.stop, false);
    if (runs)
        *members = gxd_team_run(team, cfg->workers - 1, s_member, &r);
    rc = r.rc;
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
out:
    for (int fi = 0; r.st && fi < n_frames; fi++)
        free(r.st[fi]);
    free(r.st);
    free(r.ready);
    return rc;
}
