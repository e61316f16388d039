/*
 * Exploration (seed 003): the collection queue of signatures that missed,
 * admission by priority, and the explorer thread that measures one
 * signature at a time on idle time only.
 *
 * Admission: the explorer takes the waiting signature with the highest
 * priority, hits × weight: how often a compile met it times the time its
 * step took in the graph's profile (runs × mean ns; the profile store), or
 * its multiply-adds when the profile has none, so the products that cost
 * the daemon most are tuned first.
 * The collection queue is bounded (GXD_TUNE_MAX_PENDING); a signature met
 * when it is full is dropped (met again later, it is queued again).
 *
 * Idle time: the thread runs at the lowest priority (nice 19) and takes a
 * timed sample only while the idle callback says no job is queued or
 * running, discarding a sample during which a job arrived; a job that
 * arrives mid-run waits for at most one run of one candidate (bounded by
 * the product's size; tune.budget_ms bounds a signature's whole
 * exploration, idle waits excluded).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon/compile/compile.h"
#include "daemon/tune/tune_internal.h"
#include "core/internal.h"

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void gxd_tune_set_idle(gxd_tune *t, gxd_tune_idle_fn fn, void *arg)
{
    pthread_mutex_lock(&t->qmu);
    t->idle = fn;
    t->idle_arg = arg;
    pthread_mutex_unlock(&t->qmu);
}

void gxd_tune_set_changed(gxd_tune *t, gxd_tune_changed_fn fn, void *arg)
{
    pthread_mutex_lock(&t->qmu);
    t->changed = fn;
    t->changed_arg = arg;
    pthread_mutex_unlock(&t->qmu);
}

void gxd_tune_queue_sig(gxd_tune *t, const char *key, const gxd_tune_sig *sig, double weight,
                        bool additive)
{
    if (!(weight > 0)) /* unknown: its multiply-adds */
        weight = gxd_tune_op_of(sig->op)->madds(sig);
    for (size_t i = 0; i < t->n_pending; i++)
        if (!strcmp(t->pending[i].key, key)) {
            t->pending[i].hits++;
            t->pending[i].additive &= additive;
            if (weight > t->pending[i].weight)
                t->pending[i].weight = weight;
            return;
        }
    for (size_t i = 0; i < t->n_tried && i < GXD_TUNE_MAX_PENDING; i++)
        if (t->tried[i] && !strcmp(t->tried[i], key))
            return; /* explored this run without a winner */
    if (t->n_pending >= GXD_TUNE_MAX_PENDING)
        return;
    char *k = gx_strdup(key);
    if (!k)
        return;
    t->pending[t->n_pending++] =
        (gxd_tune_pending){.key = k, .sig = *sig, .hits = 1, .weight = weight, .additive = additive};
    pthread_mutex_lock(&t->mu);
    t->st.queued++;
    pthread_mutex_unlock(&t->mu);
    pthread_cond_broadcast(&t->qcv);
}

/* Append "fmt" to others (cut at its end). */
static void s_append(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void s_append(char *dst, size_t len, const char *fmt, ...)
{
    size_t o = strlen(dst);
    if (o + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + o, len - o, fmt, ap);
    va_end(ap);
}

/* Wait until idle() says so (or there is no idle()); false when the
 * registry is stopping. */
static bool s_wait_idle(gxd_tune *t, gxd_tune_idle_fn idle, void *arg)
{
    uint64_t e;
    while (!atomic_load(&t->stop)) {
        if (!idle || idle(arg, &e))
            return true;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Measure sig's candidates: every one (old NULL), or (additive) old's
 * winner and those old lacks, keeping old's other candidates in the
 * record; the incumbent (the default, or old's winner) is measured first
 * and stays unless another is over GXD_TUNE_MARGIN faster. */
static int s_explore(gxd_tune *t, const gxd_tune_sig *sig, const gxd_tune_rec *old,
                     gxd_tune_rec *out, int *n_run)
{
    pthread_mutex_lock(&t->qmu);
    gxd_tune_idle_fn idle = t->idle;
    void *idle_arg = t->idle_arg;
    pthread_mutex_unlock(&t->qmu);
    /* every step waits for idle time: the inputs and the reference too */
    if (!s_wait_idle(t, idle, idle_arg))
        return GX_ESHUTDOWN;
    gxd_tune_bench bn;
    if (gxd_tune_bench_init(&bn, sig) != GX_OK)
        return GX_ENOMEM;
    const int64_t t0 = s_now_us(), now = (int64_t)time(NULL);
    gxd_tune_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.ns = -1;
    /* the incumbent first: the others are compared with it as they come */
    const gxd_tune_impl *def = old ? gxd_tune_impl_find(t, old->impl, old->version)
                                   : gxd_tune_default(t, sig->op);
    const gxd_tune_impl *order[GXD_TUNE_MAX_IMPLS];
    size_t n_order = 0;
    if (def && gxd_tune_impl_kernel(def, sig->op))
        order[n_order++] = def;
    for (size_t i = 0; i < t->n_impls; i++)
        if (&t->impls[i] != def && gxd_tune_impl_kernel(&t->impls[i], sig->op) &&
            (!old || !gxd_tune_rec_has(old, &t->impls[i])))
            order[n_order++] = &t->impls[i];
    const int64_t budget_ns = t->o.budget_ms * 1000000 / (int64_t)(n_order ? n_order : 1);
    int64_t rejected = 0, def_ns = -1;
    const gxd_tune_impl *best = NULL;
    char def_why[256] = "";
    int run = 0;
    for (size_t i = 0; i < n_order && !atomic_load(&t->stop); i++) {
        const gxd_tune_impl *im = order[i];
        char why[256];
        int64_t run_ns = 0;
        int pieces = 1;
        if (!s_wait_idle(t, idle, idle_arg))
            break;
        gxd_tune_cand *c = &rec.cands[rec.n_cands];
        snprintf(c->name, sizeof c->name, "%s", im->name);
        c->version = im->version;
        snprintf(c->build, sizeof c->build, "%s", im->build);
        c->ns = -1;
        c->at = now;
        if (!gxd_tune_bench_check(&bn, im, why, sizeof why, &run_ns, &pieces, idle, idle_arg,
                                  &t->stop)) {
            if (run_ns < 0)
                break; /* stopping */
            s_append(rec.others, sizeof rec.others, "%s%s@%d:rejected (%s)", rec.others[0] ? ", " : "",
                     im->name, im->version, why);
            rejected++;
            rec.n_cands++;
            run++;
            continue;
        }
        int64_t ns;
        if (im->fixed_ns <= 0 && best && pieces == 1 && run_ns > GXD_TUNE_SLOW * rec.ns)
            ns = run_ns; /* clearly slower: one run is enough */
        else
            ns = gxd_tune_bench_time(&bn, im, run_ns > GXD_TUNE_LONG_RUN_NS ? 3 : GXD_TUNE_MAX_RUNS,
                                     gxd_tune_bench_pieces(&bn, run_ns), budget_ns, idle,
                                     idle_arg, &t->stop);
        if (ns < 0)
            break; /* stopping */
        c->ns = ns;
        rec.n_cands++;
        run++;
        if (im == def) {
            def_ns = ns;
            snprintf(def_why, sizeof def_why, "%s", why);
        }
        s_append(rec.others, sizeof rec.others, "%s%s@%d:%lld", rec.others[0] ? ", " : "",
                 im->name, im->version, (long long)ns);
        if (!best || ns < rec.ns) {
            best = im;
            rec.ns = ns;
            snprintf(rec.validation, sizeof rec.validation, "%s", why);
        }
    }
    gxd_tune_bench_fini(&bn);
    if (n_run)
        *n_run = run;
    if (best && def_ns > 0 && best != def && (double)def_ns <= (double)rec.ns * (1.0 + GXD_TUNE_MARGIN)) {
        best = def; /* within the noise of the fastest: keep the incumbent */
        rec.ns = def_ns;
        snprintf(rec.validation, sizeof rec.validation, "%s", def_why);
    }
    /* additive: the candidates measured before and not now stay, with
     * their times of then */
    for (int i = 0; old && i < old->n_cands && rec.n_cands < GXD_TUNE_MAX_IMPLS; i++) {
        const gxd_tune_cand *oc = &old->cands[i];
        if (gxd_tune_rec_cand(&rec, oc->name, oc->version))
            continue;
        rec.cands[rec.n_cands++] = *oc;
        if (oc->ns >= 0)
            s_append(rec.others, sizeof rec.others, "%s%s@%d:%lld (earlier)",
                     rec.others[0] ? ", " : "", oc->name, oc->version, (long long)oc->ns);
        else
            s_append(rec.others, sizeof rec.others, "%s%s@%d:rejected (earlier)",
                     rec.others[0] ? ", " : "", oc->name, oc->version);
    }
    pthread_mutex_lock(&t->mu);
    t->st.explored++;
    t->st.rejected += rejected;
    t->st.explore_us += s_now_us() - t0;
    pthread_mutex_unlock(&t->mu);
    if (atomic_load(&t->stop) && !best)
        return GX_ESHUTDOWN;
    if (!best) {
        if (out)
            *out = rec;
        return GX_ENOTFOUND;
    }
    pthread_mutex_lock(&t->mu); /* wins per source (STATS) */
    int w = 0;
    while (w < t->st.n_wins && strcmp(t->st.wins[w].source, best->source) != 0)
        w++;
    if (w == t->st.n_wins && w < GXD_TUNE_MAX_IMPLS)
        snprintf(t->st.wins[t->st.n_wins++].source, sizeof t->st.wins[0].source, "%s",
                 best->source);
    if (w < t->st.n_wins)
        t->st.wins[w].n++;
    pthread_mutex_unlock(&t->mu);
    snprintf(rec.impl, sizeof rec.impl, "%s", best->name);
    rec.version = best->version;
    snprintf(rec.build, sizeof rec.build, "%s", best->build);
    snprintf(rec.host, sizeof rec.host, "%s", t->host);
    rec.measured_at = (int64_t)time(NULL);
    rec.level = GXD_TUNE_MEMORY;
    (void)gxd_tune_store(t, sig, &rec); /* a database error is counted and logged there */
    if (out)
        *out = rec;
    if (t->log) {
        char s[512];
        gxd_tune_sig_str(sig, s, sizeof s);
        GXD_LOG(t->log, GXD_LOG_INFO, "tune: %s: %s@%d (%lld ns; %s)", s, rec.impl, rec.version,
                (long long)rec.ns, rec.others);
    }
    /* every winner, the default's too: a plan compiled on the default
     * re-plans to run (and say) the tuned choice */
    pthread_mutex_lock(&t->qmu);
    gxd_tune_changed_fn fn = t->changed;
    void *arg = t->changed_arg;
    pthread_mutex_unlock(&t->qmu);
    if (fn)
        fn(arg);
    return GX_OK;
}

int gxd_tune_explore_sig(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *out)
{
    return s_explore(t, sig, NULL, out, NULL);
}

int gxd_tune_explore_more(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *out, int *n_run)
{
    gxd_tune_rec *old = malloc(sizeof *old);
    if (!old)
        return GX_ENOMEM;
    const bool have = gxd_tune_peek(t, sig, old); /* valid records only */
    const int rc = s_explore(t, sig, have ? old : NULL, out, n_run);
    free(old);
    return rc;
}

/* The waiting signature with the highest priority, taken out of the
 * queue (under qmu); false when none. */
static bool s_admit(gxd_tune *t, gxd_tune_pending *out)
{
    if (!t->n_pending)
        return false;
    size_t best = 0;
    double bp = -1.0;
    for (size_t i = 0; i < t->n_pending; i++) {
        const double p = (double)t->pending[i].hits * t->pending[i].weight;
        if (p > bp) {
            bp = p;
            best = i;
        }
    }
    *out = t->pending[best];
    t->pending[best] = t->pending[--t->n_pending];
    return true;
}

static void *s_explore_main(void *arg)
{
    gxd_tune *t = arg;
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    pthread_mutex_lock(&t->qmu);
    while (!atomic_load(&t->stop)) {
        gxd_tune_pending p;
        if (!s_admit(t, &p)) {
            pthread_cond_broadcast(&t->qcv); /* gxd_tune_explore_wait */
            pthread_cond_wait(&t->qcv, &t->qmu);
            continue;
        }
        t->busy = true;
        pthread_mutex_unlock(&t->qmu);
        const int rc = p.additive ? gxd_tune_explore_more(t, &p.sig, NULL, NULL)
                                  : gxd_tune_explore_sig(t, &p.sig, NULL);
        pthread_mutex_lock(&t->qmu);
        t->busy = false;
        if (rc == GX_ENOTFOUND || rc == GX_ENOMEM) { /* not again this run */
            size_t slot = t->n_tried++ % GXD_TUNE_MAX_PENDING;
            free(t->tried[slot]);
            t->tried[slot] = p.key;
            p.key = NULL;
        }
        free(p.key);
        pthread_cond_broadcast(&t->qcv);
    }
    pthread_mutex_unlock(&t->qmu);
    return NULL;
}

/* Start the thread (under qmu). */
static int s_start(gxd_tune *t)
{
    if (t->started)
        return GX_OK;
    atomic_store(&t->stop, false);
    if (pthread_create(&t->thread, NULL, s_explore_main, t) != 0)
        return GX_EINTERNAL;
    t->started = true;
    return GX_OK;
}

int gxd_tune_explore_start(gxd_tune *t)
{
    if (!t || t->o.mode != GXD_TUNE_EXPLORE)
        return GX_OK;
    pthread_mutex_lock(&t->qmu);
    int rc = s_start(t);
    pthread_mutex_unlock(&t->qmu);
    return rc;
}

int gxd_tune_request_plan(gxd_tune *t, const gxd_plan *p)
{
    if (!t || t->o.mode == GXD_TUNE_OFF)
        return GX_EUNSUPPORTED;
    int n = 0;
    pthread_mutex_lock(&t->qmu);
    for (size_t i = 0; i < p->n_impls; i++) {
        const gxd_tune_sig *sig = p->impls[i].sig;
        char *key = sig ? gxd_tune_key(t, sig) : NULL;
        if (!key)
            continue;
        for (size_t k = 0; k < t->n_tried && k < GXD_TUNE_MAX_PENDING; k++)
            if (t->tried[k] && !strcmp(t->tried[k], key)) { /* asked for: try again */
                free(t->tried[k]);
                t->tried[k] = NULL;
            }
        gxd_tune_queue_sig(t, key, sig, 0.0, false);
        for (size_t k = 0; k < t->n_pending; k++)
            if (!strcmp(t->pending[k].key, key)) {
                t->pending[k].hits = INT64_MAX / 4; /* ahead of the waiting ones */
                n++;
            }
        free(key);
    }
    int rc = n ? s_start(t) : GX_OK;
    pthread_mutex_unlock(&t->qmu);
    return rc < 0 ? rc : n;
}

void gxd_tune_explore_stop(gxd_tune *t)
{
    if (!t || !t->started)
        return;
    pthread_mutex_lock(&t->qmu);
    atomic_store(&t->stop, true);
    pthread_cond_broadcast(&t->qcv);
    pthread_mutex_unlock(&t->qmu);
    pthread_join(t->thread, NULL);
    t->started = false;
    atomic_store(&t->stop, false); /* gxd_tune_explore_sig on this thread runs again */
}

bool gxd_tune_explore_wait(gxd_tune *t, int64_t timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)(timeout_ms / 1000);
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->qmu);
    bool ok = true;
    while (t->started && (t->n_pending || t->busy) && ok)
        ok = pthread_cond_timedwait(&t->qcv, &t->qmu, &dl) == 0;
    ok = !t->n_pending && !t->busy;
    pthread_mutex_unlock(&t->qmu);
    return ok;
}
