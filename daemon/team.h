/*
 * Teams (seed 002): a worker running a job recruits idle workers to help
 * with it. The leader posts a call (a function and its argument) wanting
 * some helpers; idle workers that see it join and call the function too,
 * each with its own member number; the leader calls it as well, then closes
 * the call and waits for every helper that joined to return. Helpers that
 * never come (they were busy after all) are fine: the function must share
 * its work dynamically (members claim units of work from a common counter),
 * so the leader alone can finish it.
 *
 * No thread is ever created for a team: its members are the pool's pinned
 * workers, each running one thing at a time, so the daemon never runs more
 * busy threads than the cores it owns. Idle workers block in the job queue
 * (gxd_queue_pop_or), which a new call wakes; a queued job goes before
 * helping.
 *
 * A call and its argument live on the leader's stack, not reference-counted
 * like other shared objects: helpers reach the call only under t->mu, and
 * the leader unlinks it and waits until every helper that joined has
 * returned before its frame goes away.
 */
#ifndef GXD_TEAM_H
#define GXD_TEAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "daemon/queue.h"

typedef struct gxd_team_call gxd_team_call;

typedef struct gxd_team {
    gxd_queue *queue; /* where idle workers wait */
    pthread_mutex_t mu;
    gxd_team_call *calls; /* open calls, guarded by mu */
    atomic_int open_slots; /* helpers the open calls still want */
    atomic_int idle;       /* workers waiting for work */
} gxd_team;

/* member 0 is the leader, helpers are numbered from 1 in order of joining. */
typedef void (*gxd_team_fn)(void *arg, int member);

void gxd_team_init(gxd_team *t, gxd_queue *q);
/* No call may be open. */
void gxd_team_fini(gxd_team *t);

/* Workers waiting for work right now (a hint: it may change at once). */
int gxd_team_idle(gxd_team *t);

/* Leader: run fn(arg, 0) on the calling thread and fn(arg, k) on up to
 * `helpers` idle workers that join while it runs; returns when every call
 * has returned, with the number of members that took part (1 + helpers
 * that joined). */
int gxd_team_run(gxd_team *t, int helpers, gxd_team_fn fn, void *arg);

/* Worker: wait for the next job and return it (the caller owns it; the
 * queue holds it until released, daemon/queue.h); while waiting, join
 * open calls as a helper. NULL once the queue is closed. */
gxd_job *gxd_team_next_job(gxd_team *t);

#endif
