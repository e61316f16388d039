/* Teams of workers. See team.h. */
#include "daemon/team.h"

struct gxd_team_call {
    gxd_team_fn fn;
    void *arg;
    int wanted;   /* helpers it still takes */
    int joined;   /* helpers that joined */
    int returned; /* helpers whose fn returned */
    bool closed;  /* the leader is done: no more joins */
    pthread_cond_t done;
    gxd_team_call *next;
};

void gxd_team_init(gxd_team *t, gxd_queue *q)
{
    t->queue = q;
    pthread_mutex_init(&t->mu, NULL);
    t->calls = NULL;
    atomic_init(&t->open_slots, 0);
    atomic_init(&t->idle, 0);
}

void gxd_team_fini(gxd_team *t)
{
    pthread_mutex_destroy(&t->mu);
}

int gxd_team_idle(gxd_team *t)
{
    return atomic_load_explicit(&t->idle, memory_order_relaxed);
}

int gxd_team_run(gxd_team *t, int helpers, gxd_team_fn fn, void *arg)
{
    if (helpers <= 0) {
        fn(arg, 0);
        return 1;
    }
    gxd_team_call c = {.fn = fn, .arg = arg, .wanted = helpers};
    pthread_cond_init(&c.done, NULL);
    pthread_mutex_lock(&t->mu);
    c.next = t->calls;
    t->calls = &c;
    atomic_fetch_add(&t->open_slots, helpers);
    pthread_mutex_unlock(&t->mu);
    gxd_queue_kick(t->queue, helpers);

    fn(arg, 0);

    pthread_mutex_lock(&t->mu);
    for (gxd_team_call **pp = &t->calls; *pp; pp = &(*pp)->next)
        if (*pp == &c) {
            *pp = c.next;
            break;
        }
    atomic_fetch_sub(&t->open_slots, c.wanted);
    c.closed = true;
    while (c.returned != c.joined)
        pthread_cond_wait(&c.done, &t->mu);
    pthread_mutex_unlock(&t->mu);
    pthread_cond_destroy(&c.done);
    return 1 + c.joined;
}

static bool s_wanted(void *arg)
{
    return atomic_load_explicit(&((gxd_team *)arg)->open_slots, memory_order_relaxed) > 0;
}

/* Join one open call, if one still wants a helper, and run it. */
static void s_help(gxd_team *t)
{
    pthread_mutex_lock(&t->mu);
    gxd_team_call *c = t->calls;
    while (c && c->wanted == 0)
        c = c->next;
    if (!c) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    c->wanted--;
    atomic_fetch_sub(&t->open_slots, 1);
    int member = ++c->joined;
    pthread_mutex_unlock(&t->mu);

    c->fn(c->arg, member);

    pthread_mutex_lock(&t->mu);
    if (++c->returned == c->joined && c->closed)
        pthread_cond_signal(&c->done);
    pthread_mutex_unlock(&t->mu);
}

gxd_job *gxd_team_next_job(gxd_team *t)
{
    for (;;) {
        bool woken;
        atomic_fetch_add(&t->idle, 1);
        gxd_job *j = gxd_queue_pop_or(t->queue, s_wanted, t, &woken);
        atomic_fetch_sub(&t->idle, 1);
        if (!woken)
            return j;
        s_help(t);
    }
}
