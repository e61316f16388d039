/*
 * The sequential executor; it times the steps when the plan wants it.
 *
 * Runs of device steps as one graph (seed 004): a maximal run of
 * consecutive kernel steps (no copy, dynamic or control-flow step among
 * them; folded steps do not count) of one device whose table has the
 * graph slots (ops/backend.h), with at least two kernels, is recorded
 * once and then replayed as one launch. Kernel arguments hold device
 * pointers, so a graph serves only runs with the same pointers: the
 * plan's cache (p->graphs, bounded, under its own lock) keys a graph by
 * the run's first step, the queue, and a hash of every pointer the run's
 * kernels get. A key's first run goes step by step (kernels compile, and
 * libraries size their workspaces, outside a recording), its second is
 * recorded then replayed, later ones are replayed. A recording that
 * fails marks that run of the plan "step by step" for good; a graph that
 * no longer fits its queue (replay says 1) is dropped and recorded
 * again. Results never depend on the graphs: every failure falls back to
 * the steps one by one, before any of them ran.
 *
 * The run's device time (f->device_ns) is measured with marks on the
 * devices' queues around each stretch of their kernel steps (below).
 */
#include <pthread.h>
#include <stdlib.h>

#include "daemon/exec/exec.h"

#define S_GRAPHS_MAX 32 /* graphs (keys) a plan holds */
#define S_BAD_MAX 32    /* runs marked step by step */

typedef struct s_entry {
    size_t start;         /* key: the run's first step, */
    const void *queue;    /* the queue, */
    uint64_t fp;          /* and the hash of its kernels' pointers */
    const gx_backend *b;
    atomic_flag busy;     /* a job is using it (else: step by step) */
    bool seen;            /* a run went step by step with this key */
    void *graph;          /* recorded, or NULL */
} s_entry;

typedef struct gxd_graphs {
    pthread_mutex_t mu; /* n and the keys, bad */
    s_entry e[S_GRAPHS_MAX];
    int n;
    size_t bad[S_BAD_MAX];
    int n_bad;
    _Atomic int64_t captures, replays, failed, stale, full;
    atomic_int held; /* graphs in the entries */
} gxd_graphs;

/* The plan's cache, made at first use; NULL when out of memory. */
static gxd_graphs *s_cache(const gxd_plan *p)
{
    gxd_plan *mp = (gxd_plan *)p; /* a run-time cache (compile.h) */
    gxd_graphs *g = atomic_load_explicit(&mp->graphs, memory_order_acquire);
    if (g)
        return g;
    gxd_graphs *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    pthread_mutex_init(&n->mu, NULL);
    for (int i = 0; i < S_GRAPHS_MAX; i++)
        atomic_flag_clear(&n->e[i].busy);
    if (atomic_compare_exchange_strong(&mp->graphs, &g, n))
        return n;
    pthread_mutex_destroy(&n->mu); /* another job made it first: g is it */
    free(n);
    return g;
}

void gxd_plan_graphs_free(gxd_plan *p)
{
    gxd_graphs *g = atomic_exchange(&p->graphs, NULL);
    if (!g)
        return;
    for (int i = 0; i < g->n; i++)
        if (g->e[i].graph)
            g->e[i].b->graph_free(g->e[i].b, g->e[i].graph);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

gxd_graph_stats gxd_plan_graph_stats(const gxd_plan *p)
{
    gxd_graph_stats st = {0};
    gxd_graphs *g = atomic_load_explicit(&((gxd_plan *)p)->graphs, memory_order_acquire);
    if (!g)
        return st;
    st.captures = atomic_load(&g->captures);
    st.replays = atomic_load(&g->replays);
    st.failed = atomic_load(&g->failed);
    st.stale = atomic_load(&g->stale);
    st.full = atomic_load(&g->full);
    st.entries = atomic_load(&g->held);
    return st;
}

/* Can step s be part of a recorded run on the frame's queues? */
static bool s_graphable(const gxd_frame *f, const gxd_step *st)
{
    const gx_backend *b = f->plan->devices[st->device];
    return st->kernel && !st->copy && !st->dynamic && st->device > 0 && b->capture_begin &&
           b->capture_end && b->replay && b->graph_free && f->dm.queue[st->device];
}

/* The end (exclusive) of the run that starts at step s, or s when no run
 * of at least two kernels starts there. */
static size_t s_run_end(const gxd_frame *f, size_t s)
{
    const gxd_plan *p = f->plan;
    const gxd_step *first = &p->steps[s];
    if (first->folded || !s_graphable(f, first))
        return s;
    size_t end = s + 1, kernels = 1;
    for (size_t t = s + 1; t < p->n_steps; t++) {
        const gxd_step *st = &p->steps[t];
        if (st->folded)
            continue;
        if (st->device != first->device || !s_graphable(f, st))
            break;
        kernels++;
        end = t + 1;
    }
    return kernels >= 2 ? end : s;
}

static uint64_t s_mix(uint64_t h, const void *ptr)
{
    uint64_t v = (uint64_t)(uintptr_t)ptr;
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 1099511628211ull;
    return h;
}

/* A hash of every pointer the run's kernels get (FNV-1a). */
static uint64_t s_fingerprint(const gxd_frame *f, size_t s, size_t end)
{
    const gxd_plan *p = f->plan;
    uint64_t h = 1469598103934665603ull;
    h = s_mix(h, f->dm.arena[p->steps[s].device]);
    for (size_t t = s; t < end; t++) {
        const gxd_step *st = &p->steps[t];
        if (st->folded)
            continue;
        for (int k = 0; k < st->n_formal; k++)
            h = s_mix(h, st->in[k] < 0 ? NULL : f->val[st->in[k]].data);
        for (int k = 0; k < st->n_out; k++)
            h = s_mix(h, f->val[st->out[k]].data);
        h = s_mix(h, st->scratch >= 0 ? f->val[st->scratch].data : NULL);
    }
    return h;
}

/* The entry of the key, made if new and there is room (mu held); NULL
 * when the run is marked step by step or the cache is full. */
static s_entry *s_entry_locked(gxd_graphs *g, const gx_backend *b, size_t s, const void *q,
                               uint64_t fp)
{
    for (int i = 0; i < g->n_bad; i++)
        if (g->bad[i] == s)
            return NULL;
    for (int i = 0; i < g->n; i++)
        if (g->e[i].start == s && g->e[i].queue == q && g->e[i].fp == fp)
            return &g->e[i];
    if (g->n == S_GRAPHS_MAX) {
        atomic_fetch_add(&g->full, 1);
        return NULL;
    }
    s_entry *e = &g->e[g->n++];
    e->start = s;
    e->queue = q;
    e->fp = fp;
    e->b = b;
    return e;
}

/* The run starting at s fails to record: step by step from now on. */
static void s_mark_bad(gxd_graphs *g, size_t s)
{
    atomic_fetch_add(&g->failed, 1);
    pthread_mutex_lock(&g->mu);
    if (g->n_bad < S_BAD_MAX)
        g->bad[g->n_bad++] = s;
    pthread_mutex_unlock(&g->mu);
}

/* Steps s..end-1 as one graph: *done true when its work is on the queue;
 * false when the caller must run them step by step (none has run). An
 * error only from a step that failed while recording. */
static int s_run_graph(gxd_frame *f, size_t s, size_t end, bool *done)
{
    const gxd_plan *p = f->plan;
    const int d = p->steps[s].device;
    const gx_backend *b = p->devices[d];
    void *q = f->dm.queue[d];
    *done = false;
    gxd_graphs *g = s_cache(p);
    if (!g)
        return GX_OK;
    const uint64_t fp = s_fingerprint(f, s, end);
    pthread_mutex_lock(&g->mu);
    s_entry *e = s_entry_locked(g, b, s, q, fp);
    pthread_mutex_unlock(&g->mu);
    if (!e || atomic_flag_test_and_set(&e->busy))
        return GX_OK;
    int rc = GX_OK;
    if (e->graph) {
        int r = b->replay(b, e->graph, q);
        if (r == GX_OK) {
            atomic_fetch_add(&g->replays, 1);
            *done = true;
            goto out;
        }
        b->graph_free(b, e->graph);
        e->graph = NULL;
        atomic_fetch_sub(&g->held, 1);
        if (r > 0) /* no longer fits the queue: record again next time */
            atomic_fetch_add(&g->stale, 1);
        else
            s_mark_bad(g, s);
        goto out;
    }
    if (!e->seen) { /* a key's first run goes step by step */
        e->seen = true;
        goto out;
    }
    if (b->capture_begin(b, q) < 0)
        goto out;
    for (size_t t = s; t < end && rc == GX_OK; t++)
        rc = gxd_exec_step(f, t);
    void *graph = b->capture_end(b, q);
    if (rc < 0 || !graph) {
        if (graph)
            b->graph_free(b, graph);
        if (rc == GX_OK)
            s_mark_bad(g, s);
        goto out;
    }
    atomic_fetch_add(&g->captures, 1);
    if (b->replay(b, graph, q) != GX_OK) {
        b->graph_free(b, graph);
        s_mark_bad(g, s);
        goto out;
    }
    e->graph = graph;
    atomic_fetch_add(&g->held, 1);
    atomic_fetch_add(&g->replays, 1);
    *done = true;
out:
    atomic_flag_clear(&e->busy);
    return rc;
}

/* ---- device time ----
 * Each stretch of kernel steps of one device with marks (ops/backend.h),
 * no copy and no other device's step among them, is bracketed by two
 * marks on that device's queue. The spans are added up when the run ends
 * (by then the copies back to the host have waited for the device), or
 * the oldest earlier when S_SPANS wait. */
#define S_SPANS 32

typedef struct s_timer {
    const gxd_frame *f;
    int dev; /* the open stretch's device; 0: none open */
    void *from;
    struct {
        const gx_backend *b;
        void *from, *to;
    } done[S_SPANS];
    int n;
    int64_t ns;
} s_timer;

static void s_timer_settle(s_timer *t)
{
    for (int i = 0; i < t->n; i++) {
        const gx_backend *b = t->done[i].b;
        int64_t ns = b->elapsed_ns(b, t->done[i].from, t->done[i].to);
        if (ns > 0)
            t->ns += ns;
    }
    t->n = 0;
}

static void s_timer_close(s_timer *t)
{
    if (!t->dev)
        return;
    const gx_backend *b = t->f->plan->devices[t->dev];
    if (t->n == S_SPANS)
        s_timer_settle(t);
    t->done[t->n].b = b;
    t->done[t->n].from = t->from;
    t->done[t->n++].to = b->mark(b, t->f->dm.queue[t->dev]);
    t->dev = 0;
}

/* Step s is next: closes the open stretch unless s continues it, opens
 * one at a kernel step of a device with marks. */
static void s_timer_step(s_timer *t, size_t s)
{
    const gxd_step *st = &t->f->plan->steps[s];
    if (st->folded)
        return;
    const gx_backend *b = t->f->plan->devices[st->device];
    void *q = t->f->dm.queue[st->device];
    const bool timed = st->device > 0 && !st->copy && st->kernel && b->mark && b->elapsed_ns && q;
    if (t->dev && (!timed || st->device != t->dev))
        s_timer_close(t);
    if (timed && !t->dev && (t->from = b->mark(b, q)))
        t->dev = st->device;
}

/* Steps from..to-1 one by one. */
static int s_steps(gxd_frame *f, size_t from, size_t to, bool timed, s_timer *dt)
{
    for (size_t s = from; s < to; s++) {
        if (dt)
            s_timer_step(dt, s);
        int rc = gxd_exec_should_stop(f->stop);
        int64_t t0 = timed ? gxd_now_ns() : 0;
        if (rc == GX_OK)
            rc = gxd_exec_step(f, s);
        if (rc < 0)
            return rc;
        if (timed && !f->plan->steps[s].folded)
            gxd_step_record(f->plan, s, gxd_now_ns() - t0);
    }
    return GX_OK;
}

int gxd_exec_seq(gxd_frame *f)
{
    const gxd_plan *p = f->plan;
    bool timed = gxd_plan_wants_timing(p);
    const bool graphs = !(f->lim && f->lim->no_graphs) && p->n_devices > 1;
    const bool device_time = p->n_devices > 1 && !(f->lim && f->lim->no_device_time);
    s_timer t = {.f = f}, *dt = device_time ? &t : NULL;
    int rc = GX_OK;
    f->device_ns = 0; /* subgraphs' steps add theirs while it runs */
    for (size_t s = 0; s < p->n_steps && rc == GX_OK;) {
        size_t end = graphs ? s_run_end(f, s) : s;
        if (end == s) {
            rc = s_steps(f, s, s + 1, timed, dt);
            s++;
            continue;
        }
        bool done = false;
        if (dt)
            s_timer_step(dt, s); /* the run's steps are kernels of one device */
        rc = gxd_exec_should_stop(f->stop);
        if (rc == GX_OK)
            rc = s_run_graph(f, s, end, &done);
        if (rc == GX_OK && !done)
            rc = s_steps(f, s, end, timed, dt);
        s = end;
    }
    if (dt) {
        s_timer_close(dt);
        s_timer_settle(dt);
        f->device_ns += dt->ns;
    }
    return rc;
}
