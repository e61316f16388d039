/* The model registry and per-model plan cache. See models.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/compile/artifact.h"
#include "daemon/job.h"
#include "daemon/models.h"
#include "core/wire.h"

void gxd_models_init(gxd_models *m, size_t max)
{
    memset(m, 0, sizeof *m);
    m->max = max ? max : 1;
    m->replan.stale = gxd_plan_layout_stale;
    m->compile = gxd_compile;
}

int gxd_models_set_profile(gxd_models *m, const char *dir, int64_t max_entries, int64_t max_bytes,
                           gxd_log *log)
{
    gxd_profile_store_destroy(&m->store);
    m->log = log;
    if (!dir || !*dir)
        return GX_OK;
    if (!(m->store = gxd_profile_store_new(dir, max_entries, max_bytes, log)))
        return GX_ENOMEM;
    gxd_profile_store_open(m->store);
    return GX_OK;
}

int gxd_models_set_artifacts(gxd_models *m, const char *dir, int64_t max_files,
                             int64_t max_bytes, gxd_log *log)
{
    gxd_artifacts_destroy(&m->artifacts);
    if (!dir || !*dir)
        return GX_OK;
    return (m->artifacts = gxd_artifacts_new(dir, max_files, max_bytes, log)) ? GX_OK
                                                                             : GX_ENOMEM;
}

/* ---- plans on disk ---- */

/* The artifact key of plan p's inputs (and keyed values) for lim; with
 * slice > 0, that of its plan for slices of that many rows of its batch
 * ("<key>-<rows in hex>"). */
static int s_plan_key(const gxd_model *mdl, const gxd_plan *p, const gxd_compile_limits *lim,
                      int64_t slice, char *key, size_t keylen, char *err, size_t errlen)
{
    gx_view in[GX_MAX_OP_INPUTS];
    bool keyed[GX_MAX_OP_INPUTS];
    if (p->n_inputs > GX_MAX_OP_INPUTS)
        return gx_errf(err, errlen, GX_ELIMIT, "more than %d inputs", GX_MAX_OP_INPUTS);
    for (size_t i = 0; i < p->n_inputs; i++) {
        in[i] = p->values[p->inputs[i]].view; /* data: the keyed inputs' values */
        keyed[i] = p->values[p->inputs[i]].keyed;
    }
    gxd_artifact_key(mdl->id.hex, in, keyed, p->n_inputs, lim, key, keylen);
    size_t n = strlen(key);
    if (slice > 0 && (size_t)snprintf(key + n, keylen - n, "-%llx", (unsigned long long)slice) >=
                         keylen - n)
        return gx_errf(err, errlen, GX_ELIMIT, "an artifact key longer than %zu", keylen);
    return GX_OK;
}

/* The constants file a plan's file names, for the reader. */
typedef struct s_consts_arg {
    gxd_model *mdl;
    void *buf; /* freed after the read */
} s_consts_arg;

static int s_consts_load(void *arg, const char *name, const void **buf, size_t *len)
{
    s_consts_arg *c = arg;
    free(c->buf);
    int rc = gxd_artifacts_load_consts(c->mdl->reg->artifacts, c->mdl->id.hex, name, &c->buf, len);
    *buf = c->buf;
    return rc;
}

/* The plan under key from the model's artifacts (whole: for a slice of
 * its batch, sharing its constants), if it serves inputs; or NULL (none;
 * one refused, which is logged and removed; or one larger than the room
 * lim->max_plan_bytes gives it, found before it is built: left on disk,
 * with *rc GX_ELIMIT and err filled). */
static gxd_plan *s_artifact_load(gxd_model *mdl, const char *key, const gxd_plan *whole,
                                 const gx_view *inputs, const gxd_compile_limits *lim, int *rc_out,
                                 char *err_out, size_t errlen)
{
    const gxd_models *m = mdl->reg;
    char err[512];
    void *buf = NULL;
    size_t len = 0;
    gxd_plan *p = NULL;
    if (gxd_artifacts_load(m->artifacts, key, &buf, &len) < 0)
        return NULL;
    s_consts_arg ca = {mdl, NULL};
    const gxd_artifact_consts cs = {s_consts_load, &ca};
    int rc = gxd_artifact_read_ex(buf, len, mdl->graph, mdl->id.hex, lim, whole, &cs, &p, err,
                                  sizeof err);
    free(buf);
    free(ca.buf);
    if (rc == GX_ELIMIT) { /* a valid plan, too large now */
        if (rc_out)
            *rc_out = gx_errf(err_out, errlen, rc, "%s", err);
        return NULL;
    }
    if (rc == GX_OK && !gxd_plan_matches(p, inputs)) /* another keyed input's value */
        rc = gx_errf(err, sizeof err, GX_ENOTFOUND, "artifact: for other keyed input values");
    if (rc < 0) {
        gxd_plan_destroy(&p);
        gxd_artifacts_reject(m->artifacts, key);
        if (m->log)
            GXD_LOG(m->log, GXD_LOG_WARN, "graph %.12s: artifact %s ignored, compiling: %s",
                    mdl->id.hex, key, err);
        return NULL;
    }
    gxd_artifacts_hit(m->artifacts);
    if (m->log)
        GXD_LOG(m->log, GXD_LOG_INFO, "graph %.12s: plan of %zu steps read from artifact %s",
                mdl->id.hex, p->n_steps, key);
    return p;
}

int gxd_model_artifact(const gxd_model *mdl, const gxd_plan *p, const gxd_compile_limits *lim,
                       void **buf, size_t *len, char *key, size_t keylen, char *err,
                       size_t errlen)
{
    int rc = s_plan_key(mdl, p, lim, 0, key, keylen, err, errlen);
    return rc < 0 ? rc : gxd_artifact_write(p, mdl->graph, mdl->id.hex, buf, len, err, errlen);
}

/* A write for the cache's writer thread: p's files under key; hold
 * keeps p alive (p itself, or the whole plan whose slice it is). */
typedef struct s_save {
    gxd_model *mdl;
    gxd_plan *hold;
    const gxd_plan *p;
    char key[128];
} s_save;

static int s_save_write(void *arg, gxd_artifacts *a)
{
    s_save *sv = arg;
    const gxd_model *mdl = sv->mdl;
    char err[512], cname[GX_ARTIFACT_CONSTS + 1];
    void *buf = NULL, *cbuf = NULL;
    size_t len = 0, clen = 0;
    int rc = gxd_artifact_write_split(sv->p, mdl->graph, mdl->id.hex, &buf, &len, &cbuf, &clen,
                                      cname, err, sizeof err);
    if (rc == GX_OK)
        rc = gxd_artifacts_save_split(a, sv->key, buf, len, cname, cbuf, clen); /* logs */
    else if (rc == GX_EUNSUPPORTED && mdl->reg->log)
        GXD_LOG(mdl->reg->log, GXD_LOG_INFO, "graph %.12s: no artifact: %s", mdl->id.hex, err);
    else if (mdl->reg->log)
        GXD_LOG(mdl->reg->log, GXD_LOG_WARN, "graph %.12s: artifact not written: %s",
                mdl->id.hex, err);
    free(buf);
    free(cbuf);
    return rc == GX_EUNSUPPORTED ? GX_OK : rc;
}

static void s_save_drop(void *arg)
{
    s_save *sv = arg;
    gxd_plan_release(&sv->hold);
    atomic_fetch_sub(&sv->mdl->writes, 1); /* before its reference goes: s_idle */
    gxd_model_release(&sv->mdl); /* may be the last: after the cache's writer stops */
    free(sv);
}

/* Write p's artifact under key, after the job (the cache's writer
 * thread; a failure is logged: the plan serves anyway). hold: p, or the
 * whole plan whose slice p is. */
static void s_artifact_save(gxd_model *mdl, gxd_plan *hold, const gxd_plan *p, const char *key)
{
    const gxd_models *m = mdl->reg;
    if (!m || !m->artifacts || p->needs_keys)
        return;
    s_save *sv = calloc(1, sizeof *sv);
    if (!sv)
        return;
    sv->mdl = gxd_model_ref(mdl);
    atomic_fetch_add(&mdl->writes, 1); /* after its reference is taken: s_idle */
    sv->hold = gxd_plan_ref(hold);
    sv->p = p;
    snprintf(sv->key, sizeof sv->key, "%s", key);
    (void)gxd_artifacts_post(m->artifacts, s_save_write, s_save_drop, sv); /* counts a drop */
}

/* p's artifact under its key. */
static void s_plan_save(gxd_model *mdl, gxd_plan *p, const gxd_compile_limits *lim)
{
    char key[128], err[256];
    if (mdl->reg && mdl->reg->artifacts && s_plan_key(mdl, p, lim, 0, key, sizeof key, err,
                                                      sizeof err) == GX_OK)
        s_artifact_save(mdl, p, p, key);
}

/* ---- slice plans on disk (gxd_slice_store) ---- */

typedef struct s_slice_arg {
    gxd_model *mdl;
    const gxd_compile_limits *lim;
    bool loaded; /* a slice plan came from disk */
} s_slice_arg;

static gxd_plan *s_slice_load(void *arg, const gxd_plan *whole, const gx_view *inputs,
                              int64_t size)
{
    s_slice_arg *a = arg;
    char key[128], err[256];
    if (s_plan_key(a->mdl, whole, a->lim, size, key, sizeof key, err, sizeof err) < 0)
        return NULL;
    /* one beyond the room is compiled instead, and refused at its size */
    gxd_plan *p = s_artifact_load(a->mdl, key, whole, inputs, a->lim, NULL, err, sizeof err);
    a->loaded = p != NULL;
    return p;
}

static void s_slice_save(void *arg, const gxd_plan *whole, const gxd_plan *slice, int64_t size)
{
    s_slice_arg *a = arg;
    char key[128], err[256];
    if (s_plan_key(a->mdl, whole, a->lim, size, key, sizeof key, err, sizeof err) == GX_OK)
        s_artifact_save(a->mdl, (gxd_plan *)whole, slice, key); /* whole's cache holds slice */
}

static void s_count(gxd_model *mdl, int64_t delta);

/* ---- plans against the memory budget ----------------------------------------
 * Every plan a model keeps is made through here, whenever it is made (at
 * LOAD, for a new input shape at RUN, a replica's slice, a re-plan): its
 * compile gets the room the budget leaves the model (limits.max_memory_bytes
 * less what its graph and plans hold), so one beyond it is refused as soon
 * as its size is known, before a job allocates its arena; what it holds is
 * then counted for the model (s_count) until it is freed. */

/* The room a new plan (or shared copy, or subplan) of model arg has: the
 * budget less what its graph and plans hold, at least 1 (0: no budget);
 * what names it for the error. */
static int64_t s_budget_room(void *arg, char *what, size_t len)
{
    gxd_model *mdl = arg;
    const int64_t budget = mdl->reg ? mdl->reg->max_bytes : 0;
    if (budget <= 0)
        return 0;
    const int64_t held = atomic_load(&mdl->bytes);
    snprintf(what, len, "limits.max_memory_bytes (%lld) less the %lld its graph and plans hold",
             (long long)budget, (long long)held);
    return budget > held ? budget - held : 1; /* 0 would be no limit */
}

/* Count bytes for model arg (a shared prepared constant, a subplan made
 * by a compile or a job), or refuse them beyond the budget. */
static int s_budget_charge(void *arg, int64_t bytes, char *err, size_t errlen)
{
    gxd_model *mdl = arg;
    const int64_t budget = mdl->reg ? mdl->reg->max_bytes : 0;
    const int64_t held = atomic_load(&mdl->bytes);
    if (bytes > 0 && budget > 0 && held + bytes > budget)
        return gx_errf(err, errlen, GX_ELIMIT,
                       "%lld more bytes (a subgraph's plan or a shared prepared constant) and "
                       "the %lld its graph and plans hold are more than "
                       "limits.max_memory_bytes (%lld)",
                       (long long)bytes, (long long)held, (long long)budget);
    s_count(mdl, bytes);
    return GX_OK;
}

/* lim, with the room a new plan of mdl has and the model's budget for
 * what it makes beyond itself; what: room for the limit's name in the
 * error. */
static void s_plan_room(gxd_model *mdl, gxd_compile_limits *lim, char *what, size_t len)
{
    lim->budget = &mdl->budget;
    const int64_t room = s_budget_room(mdl, what, len);
    if (room <= 0)
        return;
    lim->max_plan_bytes = room;
    lim->max_plan_what = what;
}

/* A slice plan kept in whole's cache counts for the model with whole's
 * own bytes (freed with it, daemon/compile/compile.c). Under mdl->mu. */
static void s_count_slice(gxd_model *mdl, const gxd_plan *whole, int64_t bytes)
{
    for (size_t i = 0; i < mdl->n_plans; i++)
        if (mdl->plans[i] == whole) {
            mdl->plan_bytes[i] += bytes;
            s_count(mdl, bytes);
            return;
        }
    for (size_t i = 0; i < mdl->n_retired; i++)
        if (mdl->retired[i] == whole) {
            mdl->retired_bytes[i] += bytes;
            s_count(mdl, bytes);
            return;
        }
    /* whole is no plan the model keeps (one job's): freed with it */
}

int gxd_model_slice(gxd_model *mdl, gxd_plan *whole, const gx_view *inputs,
                    const gxd_compile_limits *lim, gxd_plan **out, bool *owned, bool *compiled,
                    char *err, size_t errlen)
{
    char what[160];
    gxd_compile_limits slim = *lim;
    s_plan_room(mdl, &slim, what, sizeof what);
    s_slice_arg a = {mdl, &slim, false};
    const gxd_slice_store store = {s_slice_load, s_slice_save, &a};
    const bool disk = mdl->reg && mdl->reg->artifacts && !whole->needs_keys;
    int rc = gxd_plan_slice_stored(whole, mdl->graph, inputs, &slim, disk ? &store : NULL, out,
                                   owned, compiled, err, errlen);
    if (rc == GX_OK && (*compiled || a.loaded) && !*owned) {
        pthread_mutex_lock(&mdl->mu);
        s_count_slice(mdl, whole, gxd_plan_mem_bytes(*out));
        pthread_mutex_unlock(&mdl->mu);
    }
    return rc;
}

/* Retired plans no job runs any more (only the model holds them: jobs
 * take plans from the cache alone, under the lock, so none can come back)
 * have final counters: fold them into the base profile and free them.
 * Under the model's lock. A plan whose fold fails (ENOMEM) waits. */
static void s_reap_locked(gxd_model *mdl)
{
    size_t k = 0;
    for (size_t i = 0; i < mdl->n_retired; i++) {
        gxd_plan *p = mdl->retired[i];
        gxd_profile *done = NULL;
        if (atomic_load(&p->refs) == 0 && (done = gxd_profile_new(mdl->id.hex)) &&
            (mdl->profile || (mdl->profile = gxd_profile_new(mdl->id.hex))) &&
            /* nobody runs p: its subplan locks are free, waiting is fine */
            gxd_profile_fold_plan(done, p, "", true, false) == GX_OK) {
            gxd_profile_finish(done);
            (void)gxd_profile_merge(mdl->profile, done); /* ENOMEM: counts lost, not doubled */
            gxd_plan_release(&p);
            s_count(mdl, -mdl->retired_bytes[i]);
        } else {
            mdl->retired_bytes[k] = mdl->retired_bytes[i];
            mdl->retired[k++] = p;
        }
        gxd_profile_destroy(&done);
    }
    mdl->n_retired = k;
}

/* ---- the memory budget ---- */

int64_t gxd_graph_mem_bytes(const gx_graph *g)
{
    int64_t b = (int64_t)sizeof *g;
    for (size_t i = 0; i < g->n_consts; i++)
        b += 64 + (int64_t)g->consts[i].t->nbytes;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const gx_node *n = g->nodes[i];
        b += (int64_t)(sizeof *n + 32 * (n->n_in + n->n_out + 1) + sizeof *n->attr * n->n_attr);
        for (size_t a = 0; a < n->n_attr; a++)
            if (n->attr[a].type == GX_ATTR_TENSOR && n->attr[a].t)
                b += (int64_t)n->attr[a].t->nbytes;
            else if (n->attr[a].type == GX_ATTR_GRAPH && n->attr[a].g)
                b += gxd_graph_mem_bytes(n->attr[a].g);
    }
    return b;
}

/* delta bytes for mdl and its registry */
static void s_count(gxd_model *mdl, int64_t delta)
{
    atomic_fetch_add(&mdl->bytes, delta);
    if (mdl->reg)
        atomic_fetch_add(&((gxd_models *)mdl->reg)->bytes, delta);
}

void gxd_models_set_budget(gxd_models *m, int64_t max_bytes)
{
    m->max_bytes = max_bytes;
}

/* The model's profile now, under its lock; NULL on ENOMEM or try and a
 * subplan cache is busy. */
static gxd_profile *s_profile_locked(gxd_model *mdl, bool try)
{
    s_reap_locked(mdl);
    gxd_profile *p = gxd_profile_new(mdl->id.hex);
    if (!p)
        return NULL;
    int rc = GX_OK;
    for (size_t i = 0; i < mdl->n_plans && rc == GX_OK; i++)
        rc = gxd_profile_fold_plan(p, mdl->plans[i], "", true, try);
    for (size_t i = 0; i < mdl->n_retired && rc == GX_OK; i++)
        rc = gxd_profile_fold_plan(p, mdl->retired[i], "", true, try);
    if (rc == GX_OK && mdl->profile)
        rc = gxd_profile_merge(p, mdl->profile);
    if (rc < 0)
        gxd_profile_destroy(&p);
    else
        gxd_profile_finish(p);
    return p;
}

gxd_profile *gxd_model_profile(gxd_model *mdl, bool try)
{
    if (try ? pthread_mutex_trylock(&mdl->mu) != 0 : pthread_mutex_lock(&mdl->mu) != 0)
        return NULL;
    gxd_profile *p = s_profile_locked(mdl, try);
    pthread_mutex_unlock(&mdl->mu);
    return p;
}

/* Save the model's profile when jobs ran since the last save. */
static void s_save_profile(gxd_model *mdl, bool try)
{
    const gxd_models *m = mdl->reg;
    if (!m || !m->store)
        return;
    gxd_profile *p = gxd_model_profile(mdl, try);
    if (!p)
        return;
    /* a failure is logged (once per cause) by the store */
    if (p->jobs != mdl->saved_jobs && gxd_profile_store_save(m->store, p) == GX_OK)
        mdl->saved_jobs = p->jobs;
    gxd_profile_destroy(&p);
}

void gxd_models_save_profiles(gxd_models *m)
{
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next)
        s_save_profile(mdl, true);
}

void gxd_models_fini(gxd_models *m)
{
    gxd_replanner *r = &m->replan;
    /* the writes queued are done first: they hold models and plans */
    gxd_artifacts_stop(m->artifacts, true);
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
        while (r->head) { /* queued but never checked */
            gxd_model *mdl = r->head;
            r->head = mdl->replan_next;
            mdl->replan_queued = false;
            gxd_model_release(&mdl);
        }
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        r->started = false;
    }
    while (m->head) {
        gxd_model *mdl = m->head;
        m->head = mdl->next;
        gxd_model_release(&mdl);
    }
    m->n = 0;
    while (m->unloading) {
        gxd_model *mdl = m->unloading;
        m->unloading = mdl->next;
        gxd_model_release(&mdl);
    }
    m->n_unloading = 0;
    /* a model someone still holds is not saved when it goes */
    gxd_profile_store_destroy(&m->store);
    gxd_artifacts_destroy(&m->artifacts);
}

gxd_model *gxd_model_ref(gxd_model *mdl)
{
    if (mdl)
        atomic_fetch_add(&mdl->refs, 1);
    return mdl;
}

void gxd_model_release(gxd_model **mp)
{
    if (!mp || !*mp)
        return;
    gxd_model *mdl = *mp;
    *mp = NULL;
    if (atomic_fetch_sub(&mdl->refs, 1) != 1)
        return;
    s_save_profile(mdl, false);
    gxd_profile_destroy(&mdl->profile);
    /* the plans give their subplans' charges back, then the rest goes */
    for (size_t i = 0; i < mdl->n_plans; i++)
        gxd_plan_release(&mdl->plans[i]);
    for (size_t i = 0; i < mdl->n_retired; i++)
        gxd_plan_release(&mdl->retired[i]);
    gxd_shared_destroy(&mdl->shared);
    s_count(mdl, -atomic_load(&mdl->bytes));
    gx_graph_destroy(&mdl->graph);
    pthread_mutex_destroy(&mdl->mu);
    free(mdl);
}

gxd_model *gxd_models_find(gxd_models *m, const char *hex)
{
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next)
        if (strcmp(mdl->id.hex, hex) == 0) {
            mdl->last_used = gxd_now_us();
            return gxd_model_ref(mdl);
        }
    return NULL;
}

gxd_model *gxd_models_find_name(gxd_models *m, const char *name)
{
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next)
        if (mdl->name[0] && strcmp(mdl->name, name) == 0) {
            mdl->last_used = gxd_now_us();
            return gxd_model_ref(mdl);
        }
    return NULL;
}

void gxd_models_set_name(gxd_models *m, gxd_model *mdl, const char *name)
{
    for (gxd_model *o = m->head; o; o = o->next)
        if (o != mdl && strcmp(o->name, name) == 0)
            o->name[0] = '\0';
    snprintf(mdl->name, sizeof mdl->name, "%s", name);
}

int gxd_models_unload(gxd_models *m, gxd_model *mdl)
{
    gxd_model **pp = &m->head;
    while (*pp && *pp != mdl)
        pp = &(*pp)->next;
    if (!*pp)
        return GX_ENOTFOUND;
    *pp = mdl->next;
    m->n--;
    mdl->name[0] = '\0';
    if (atomic_load(&mdl->ring_binds) > 0 && m->unbind)
        m->unbind(m->unbind_arg, mdl); /* its ring slots let it go too */
    /* the caller holds one reference, the registry another: more are jobs */
    if (atomic_load(&mdl->refs) <= 2) {
        gxd_model *reg = mdl;
        gxd_model_release(&reg);
        return GX_OK;
    }
    mdl->next = m->unloading;
    m->unloading = mdl;
    m->n_unloading++;
    return GX_OK;
}

void gxd_models_reap(gxd_models *m)
{
    for (gxd_model **pp = &m->unloading; *pp;) {
        gxd_model *mdl = *pp;
        if (atomic_load(&mdl->refs) != 1) {
            pp = &mdl->next;
            continue;
        }
        *pp = mdl->next;
        m->n_unloading--;
        gxd_model_release(&mdl);
    }
}

/* Is mdl idle: held by the registry and, at most, ring slots and pending
 * artifact writes (no job, no request), and not pinned? A ring slot's
 * reference is counted in ring_binds before it is taken and after it is
 * dropped, so refs never reads below 1 + ring_binds; a write's is counted
 * in writes after it is taken and before it is dropped, so writes never
 * counts a reference a job holds. */
static bool s_idle(const gxd_models *m, gxd_model *mdl)
{
    const int binds = atomic_load(&mdl->ring_binds), writes = atomic_load(&mdl->writes);
    return !mdl->pinned && (binds == 0 || m->unbind) &&
           atomic_load(&mdl->refs) == 1 + binds + writes;
}

/* Evict idle models, least recently used first, while the registry holds
 * graphs.max of them or more than the budget less need bytes. A model
 * bound to rings is unbound first (its slots answer GX_ENOTFOUND). */
static void s_evict(gxd_models *m, int64_t need)
{
    while (m->n >= m->max ||
           (m->max_bytes > 0 && atomic_load(&m->bytes) + need > m->max_bytes)) {
        gxd_model **victim = NULL;
        for (gxd_model **pp = &m->head; *pp; pp = &(*pp)->next)
            if (s_idle(m, *pp) && (!victim || (*pp)->last_used < (*victim)->last_used))
                victim = pp;
        if (!victim)
            return; /* every model is in use: go over graphs.max rather than fail */
        gxd_model *mdl = *victim;
        *victim = mdl->next;
        m->n--;
        if (atomic_load(&mdl->ring_binds) > 0)
            m->unbind(m->unbind_arg, mdl); /* a job a ring started meanwhile keeps its own */
        gxd_model_release(&mdl);
    }
}

void gxd_models_trim(gxd_models *m)
{
    if (m->max_bytes > 0 && atomic_load(&m->bytes) > m->max_bytes)
        s_evict(m, 0);
}

gxd_model *gxd_models_peek(gxd_models *m, const char *hex)
{
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next)
        if (strcmp(mdl->id.hex, hex) == 0)
            return mdl;
    return NULL;
}

int gxd_models_add(gxd_models *m, gx_graph **g, gxd_model **out, char *err, size_t errlen)
{
    gx_graph_id id;
    gx_wire_graph_id(*g, &id);
    return gxd_models_add_id(m, g, &id, out, err, errlen);
}

int gxd_models_add_id(gxd_models *m, gx_graph **g, const gx_graph_id *idp, gxd_model **out,
                      char *err, size_t errlen)
{
    const gx_graph_id id = *idp;
    gxd_model *mdl = gxd_models_find(m, id.hex);
    *out = NULL;
    if (mdl) {
        gx_graph_destroy(g);
        *out = mdl;
        return GX_OK;
    }
    int64_t gb = gxd_graph_mem_bytes(*g), idle = 0;
    for (gxd_model *o = m->head; o; o = o->next)
        if (s_idle(m, o))
            idle += atomic_load(&o->bytes);
    /* nothing is evicted for a graph that would not fit anyway */
    if (m->max_bytes > 0 && atomic_load(&m->bytes) - idle + gb > m->max_bytes)
        return gx_errf(err, errlen, GX_ELIMIT,
                       "the graph needs %lld bytes and limits.max_memory_bytes is %lld, of which "
                       "%lld are held by graphs in use",
                       (long long)gb, (long long)m->max_bytes,
                       (long long)(atomic_load(&m->bytes) - idle));
    s_evict(m, gb);
    if (!(mdl = calloc(1, sizeof *mdl)))
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    if (pthread_mutex_init(&mdl->mu, NULL) != 0) {
        free(mdl);
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    mdl->id = id;
    mdl->graph = *g;
    *g = NULL;
    mdl->shared = gxd_shared_new(); /* NULL (ENOMEM): each plan packs its own */
    mdl->budget = (gxd_budget){s_budget_room, s_budget_charge, mdl};
    atomic_init(&mdl->refs, 2); /* registry + caller */
    mdl->reg = m;
    if (m->store) {
        char perr[512];
        if (gxd_profile_store_load(m->store, id.hex, &mdl->profile, perr, sizeof perr) < 0 && m->log)
            GXD_LOG(m->log, GXD_LOG_WARN, "profile ignored: %s", perr);
        mdl->saved_jobs = mdl->profile ? mdl->profile->jobs : 0;
        mdl->replan_jobs = mdl->saved_jobs;
    }
    mdl->last_used = gxd_now_us();
    mdl->serial = ++m->serials;
    mdl->next = m->head;
    m->head = mdl;
    m->n++;
    s_count(mdl, gb);
    *out = mdl;
    return GX_OK;
}

int gxd_model_verify(gxd_model *mdl, const gxd_compile_limits *lim, char *err, size_t errlen)
{
    pthread_mutex_lock(&mdl->mu);
    if (mdl->verified == 0) {
        bool keyed[GX_MAX_OP_INPUTS + 1] = {false};
        int rc = mdl->graph->n_inputs <= GX_MAX_OP_INPUTS
                     ? gxd_verify_keyed(mdl->graph, lim, keyed, mdl->error, sizeof mdl->error)
                     : gxd_verify(mdl->graph, lim, mdl->error, sizeof mdl->error);
        memcpy(mdl->keyed, keyed, sizeof mdl->keyed);
        mdl->verified = rc < 0 ? rc : 1;
    }
    int rc = mdl->verified < 0 ? gx_errf(err, errlen, mdl->verified, "%s", mdl->error) : GX_OK;
    pthread_mutex_unlock(&mdl->mu);
    return rc;
}

int gxd_model_plan(gxd_model *mdl, const gx_view *inputs, const gxd_compile_limits *lim,
                   gxd_plan **plan, int64_t *compile_us, char *err, size_t errlen)
{
    size_t n_in = mdl->graph->n_inputs;
    *plan = NULL;
    *compile_us = 0;
    if (n_in > GX_MAX_OP_INPUTS)
        return gx_errf(err, errlen, GX_ELIMIT, "graph has more than %d inputs", GX_MAX_OP_INPUTS);
    /* Compiling under the model's lock: concurrent jobs of a new shape wait
     * for the one compile instead of all doing it. */
    pthread_mutex_lock(&mdl->mu);
    int rc = GX_OK;
    for (size_t i = 0; i < mdl->n_plans; i++)
        if (gxd_plan_matches(mdl->plans[i], inputs)) {
            *plan = gxd_plan_ref(mdl->plans[i]);
            goto out;
        }
    int64_t t0 = gxd_now_us();
    char key[128];
    gxd_compile_limits plim = *lim;
    char what[160];
    s_plan_room(mdl, &plim, what, sizeof what);
    plim.shared = mdl->shared;
    if (mdl->reg && mdl->reg->artifacts) {
        gxd_artifact_key(mdl->id.hex, inputs, mdl->keyed, n_in, lim, key, sizeof key);
        if ((*plan = s_artifact_load(mdl, key, NULL, inputs, &plim, &rc, err, errlen)))
            goto cache;
        if (rc < 0)
            goto out;
    }
    /* the layout pass weighs nodes by the profile now: after a restart the
     * saved one guides the first compile (base alone if folding fails) */
    gxd_profile *now = s_profile_locked(mdl, false);
    plim.profile = now ? now : mdl->profile;
    if (plim.profile && plim.profile->jobs == 0)
        plim.profile = NULL; /* nothing ran yet: every node counts once */
    rc = (mdl->reg ? mdl->reg->compile : gxd_compile)(mdl->graph, inputs, &plim, plan, err, errlen);
    gxd_profile_destroy(&now);
    *compile_us = gxd_now_us() - t0;
    if (rc < 0)
        goto out;
    s_plan_save(mdl, *plan, lim);
cache:
    /* measured times from the profile: the policy's estimates hold from
     * the first job */
    gxd_profile_seed(mdl->profile, *plan);
    /* A plan compiled without the values of its keyed inputs (at LOAD)
     * would serve every later job dynamically: it is not kept. Otherwise
     * the cache holds it too. */
    int64_t pb = gxd_plan_mem_bytes(*plan), budget = mdl->reg ? mdl->reg->max_bytes : 0;
    if (budget > 0 && pb + atomic_load(&mdl->bytes) > budget) {
        rc = gx_errf(err, errlen, GX_ELIMIT,
                     "the plan for these inputs needs %lld bytes (one arena of %zu among them) "
                     "and its graph holds %lld: more than limits.max_memory_bytes (%lld)",
                     (long long)pb, (*plan)->arena_bytes, (long long)atomic_load(&mdl->bytes),
                     (long long)budget);
        gxd_plan_release(plan);
        goto out;
    }
    if (mdl->n_plans < GXD_MAX_PLANS_PER_MODEL && !(*plan)->needs_keys) {
        mdl->plan_bytes[mdl->n_plans] = pb;
        mdl->plans[mdl->n_plans++] = gxd_plan_ref(*plan);
        s_count(mdl, pb);
    }
out:
    pthread_mutex_unlock(&mdl->mu);
    return rc;
}

/* ---- the re-planner -------------------------------------------------------- */

/* The compile of one stale plan: its inputs as it was compiled for (shapes,
 * dtypes, values of keyed inputs) with the profile prof, swapped into the
 * model's cache in old's place. Logs the outcome; the old plan stays on
 * any error. */
static void s_replan_one(gxd_models *m, gxd_model *mdl, gxd_plan *old, const gxd_profile *prof,
                         const char *why)
{
    gxd_replanner *r = &m->replan;
    gx_view in[GX_MAX_OP_INPUTS];
    char err[1024];
    gxd_plan *np = NULL;
    int rc = GX_OK;
    if (old->n_inputs > GX_MAX_OP_INPUTS) {
        rc = gx_errf(err, sizeof err, GX_ELIMIT, "more than %d inputs", GX_MAX_OP_INPUTS);
        goto out;
    }
    for (size_t i = 0; i < old->n_inputs; i++)
        in[i] = old->values[old->inputs[i]].view; /* data: the keyed inputs' values */
    gxd_compile_limits lim = r->lim;
    char what[160];
    s_plan_room(mdl, &lim, what, sizeof what);
    lim.profile = prof;
    lim.shared = mdl->shared;
    if ((rc = m->compile(mdl->graph, in, &lim, &np, err, sizeof err)) < 0)
        goto out;
    if (!gxd_plan_matches(np, in) || np->needs_keys) {
        rc = gx_errf(err, sizeof err, GX_EINTERNAL, "the new plan does not serve the old inputs");
        goto out;
    }
    gxd_profile_seed(prof, np);
    pthread_mutex_lock(&mdl->mu);
    size_t at = mdl->n_plans;
    for (size_t i = 0; i < mdl->n_plans; i++)
        if (mdl->plans[i] == old)
            at = i;
    if (at == mdl->n_plans || mdl->n_retired == GXD_MAX_RETIRED_PLANS) {
        rc = gx_errf(err, sizeof err, GX_EBUSY, "%s",
                     at == mdl->n_plans ? "the plan left the cache"
                                        : "too many swapped-out plans still running");
    } else {
        mdl->retired_bytes[mdl->n_retired] = mdl->plan_bytes[at];
        mdl->retired[mdl->n_retired++] = old; /* the cache's hold moves */
        mdl->plan_bytes[at] = gxd_plan_mem_bytes(np);
        s_count(mdl, mdl->plan_bytes[at]);
        mdl->plans[at] = gxd_plan_ref(np); /* and ours, to save it */
    }
    pthread_mutex_unlock(&mdl->mu);
    if (rc == GX_OK) /* the next restart starts from the new plan */
        s_plan_save(mdl, np, &lim);
    gxd_plan_release(&np);
out:
    gxd_plan_destroy(&np);
    if (rc < 0) {
        atomic_fetch_add(&r->failures, 1);
        if (m->log)
            GXD_LOG(m->log, GXD_LOG_WARN, "graph %.12s: re-plan failed, keeping its plan: %s",
                    mdl->id.hex, err);
    } else {
        atomic_fetch_add(&r->replans, 1);
        if (m->log)
            GXD_LOG(m->log, GXD_LOG_INFO, "graph %.12s re-planned after %lld jobs: %s",
                    mdl->id.hex, (long long)prof->jobs, why);
    }
}

/* One model off the queue: enough jobs since its last check? then each
 * cached plan the stale question flags is compiled again. */
static void s_replan_model(gxd_models *m, gxd_model *mdl)
{
    gxd_replanner *r = &m->replan;
    gxd_plan *plans[GXD_MAX_PLANS_PER_MODEL];
    size_t n = 0;
    pthread_mutex_lock(&mdl->mu);
    gxd_profile *prof = s_profile_locked(mdl, false);
    const int64_t forced = atomic_load(&r->forced);
    if (prof && (prof->jobs - mdl->replan_jobs >= r->min_jobs || mdl->replan_forced != forced)) {
        mdl->replan_jobs = prof->jobs;
        mdl->replan_forced = forced;
        for (size_t i = 0; i < mdl->n_plans; i++)
            plans[n++] = gxd_plan_ref(mdl->plans[i]);
    }
    pthread_mutex_unlock(&mdl->mu);
    if (n)
        atomic_fetch_add(&r->checks, 1);
    for (size_t i = 0; i < n; i++) {
        char why[512] = "";
        if (r->stale(plans[i], prof, why, sizeof why))
            s_replan_one(m, mdl, plans[i], prof, why[0] ? why : "the profile changed a decision");
        gxd_plan_release(&plans[i]);
    }
    gxd_profile_destroy(&prof);
}

static void *s_replan_main(void *arg)
{
    gxd_models *m = arg;
    gxd_replanner *r = &m->replan;
    /* below the workers: a re-plan only ever improves later jobs */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && !r->head)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop)
            break;
        gxd_model *mdl = r->head;
        if (!(r->head = mdl->replan_next))
            r->tail = NULL;
        mdl->replan_next = NULL;
        r->busy = true;
        pthread_mutex_unlock(&r->mu);
        s_replan_model(m, mdl);
        pthread_mutex_lock(&r->mu);
        mdl->replan_queued = false;
        r->busy = false;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        gxd_model_release(&mdl); /* may be the last: saves the profile */
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int gxd_models_replan_start(gxd_models *m, const gxd_compile_limits *lim, int64_t min_jobs)
{
    gxd_replanner *r = &m->replan;
    if (r->started)
        return GX_OK;
    r->lim = *lim;
    r->lim.profile = NULL;
    r->min_jobs = min_jobs;
    r->stop = r->busy = false;
    r->head = r->tail = NULL;
    if (pthread_mutex_init(&r->mu, NULL) != 0)
        return GX_EINTERNAL;
    if (pthread_cond_init(&r->cv, NULL) != 0) {
        pthread_mutex_destroy(&r->mu);
        return GX_EINTERNAL;
    }
    if (pthread_create(&r->thread, NULL, s_replan_main, m) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        return GX_EINTERNAL;
    }
    r->started = true;
    return GX_OK;
}

void gxd_models_replan_tick(gxd_models *m)
{
    gxd_replanner *r = &m->replan;
    if (!r->started)
        return;
    pthread_mutex_lock(&r->mu);
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next) {
        if (mdl->replan_queued)
            continue;
        mdl->replan_queued = true;
        gxd_model_ref(mdl);
        if (r->tail)
            r->tail->replan_next = mdl;
        else
            r->head = mdl;
        r->tail = mdl;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void gxd_models_replan_force(gxd_models *m)
{
    atomic_fetch_add(&m->replan.forced, 1);
}

void gxd_models_replan_wait(gxd_models *m)
{
    gxd_replanner *r = &m->replan;
    if (!r->started)
        return;
    pthread_mutex_lock(&r->mu);
    while (r->head || r->busy)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}
