/* The model registry and per-model plan cache. See models.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/job.h"
#include "daemon/models.h"
#include "libclient/wire.h"

void gxd_models_init(gxd_models *m, size_t max)
{
    memset(m, 0, sizeof *m);
    m->max = max ? max : 1;
}

void gxd_models_set_profile(gxd_models *m, const char *dir, gxd_log *log)
{
    snprintf(m->profile_dir, sizeof m->profile_dir, "%s", dir ? dir : "");
    m->log = log;
}

gxd_profile *gxd_model_profile(gxd_model *mdl, bool try)
{
    gxd_profile *p = gxd_profile_new(mdl->id.hex);
    if (!p)
        return NULL;
    if (try ? pthread_mutex_trylock(&mdl->mu) != 0 : pthread_mutex_lock(&mdl->mu) != 0) {
        gxd_profile_destroy(&p);
        return NULL;
    }
    int rc = GX_OK;
    for (size_t i = 0; i < mdl->n_plans && rc == GX_OK; i++)
        rc = gxd_profile_fold_plan(p, mdl->plans[i], "", true, try);
    pthread_mutex_unlock(&mdl->mu);
    if (rc == GX_OK && mdl->profile)
        rc = gxd_profile_merge(p, mdl->profile);
    if (rc < 0)
        gxd_profile_destroy(&p);
    else
        gxd_profile_finish(p);
    return p;
}

/* Save the model's profile when jobs ran since the last save. */
static void s_save_profile(gxd_model *mdl, bool try)
{
    const gxd_models *m = mdl->reg;
    if (!m || !m->profile_dir[0])
        return;
    gxd_profile *p = gxd_model_profile(mdl, try);
    if (!p)
        return;
    char err[512];
    if (p->jobs != mdl->saved_jobs) {
        if (gxd_profile_save(p, m->profile_dir, err, sizeof err) < 0) {
            if (m->log)
                GXD_LOG(m->log, GXD_LOG_WARN, "profile of graph %.12s not saved: %s", mdl->id.hex, err);
        } else {
            mdl->saved_jobs = p->jobs;
        }
    }
    gxd_profile_destroy(&p);
}

void gxd_models_save_profiles(gxd_models *m)
{
    for (gxd_model *mdl = m->head; mdl; mdl = mdl->next)
        s_save_profile(mdl, true);
}

void gxd_models_fini(gxd_models *m)
{
    while (m->head) {
        gxd_model *mdl = m->head;
        m->head = mdl->next;
        gxd_model_release(&mdl);
    }
    m->n = 0;
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
    for (size_t i = 0; i < mdl->n_plans; i++)
        gxd_plan_destroy(&mdl->plans[i]);
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

static void s_evict(gxd_models *m)
{
    while (m->n >= m->max) {
        gxd_model **victim = NULL;
        for (gxd_model **pp = &m->head; *pp; pp = &(*pp)->next)
            if (atomic_load(&(*pp)->refs) == 1 && (!victim || (*pp)->last_used < (*victim)->last_used))
                victim = pp;
        if (!victim)
            return; /* every model is in use: go over the limit rather than fail */
        gxd_model *mdl = *victim;
        *victim = mdl->next;
        m->n--;
        gxd_model_release(&mdl);
    }
}

gxd_model *gxd_models_add(gxd_models *m, gx_graph **g)
{
    gx_graph_id id;
    gx_wire_graph_id(*g, &id);
    gxd_model *mdl = gxd_models_find(m, id.hex);
    if (mdl) {
        gx_graph_destroy(g);
        return mdl;
    }
    if (!(mdl = calloc(1, sizeof *mdl)))
        return NULL;
    if (pthread_mutex_init(&mdl->mu, NULL) != 0) {
        free(mdl);
        return NULL;
    }
    s_evict(m);
    mdl->id = id;
    mdl->graph = *g;
    *g = NULL;
    atomic_init(&mdl->refs, 2); /* registry + caller */
    mdl->reg = m;
    if (m->profile_dir[0]) {
        char err[512];
        if (gxd_profile_load(m->profile_dir, id.hex, &mdl->profile, err, sizeof err) < 0 && m->log)
            GXD_LOG(m->log, GXD_LOG_WARN, "profile ignored: %s", err);
        mdl->saved_jobs = mdl->profile ? mdl->profile->jobs : 0;
    }
    mdl->last_used = gxd_now_us();
    mdl->next = m->head;
    m->head = mdl;
    m->n++;
    return mdl;
}

int gxd_model_verify(gxd_model *mdl, const gxd_compile_limits *lim, char *err, size_t errlen)
{
    pthread_mutex_lock(&mdl->mu);
    if (mdl->verified == 0) {
        int rc = gxd_verify(mdl->graph, lim, mdl->error, sizeof mdl->error);
        mdl->verified = rc < 0 ? rc : 1;
    }
    int rc = mdl->verified < 0 ? gx_errf(err, errlen, mdl->verified, "%s", mdl->error) : GX_OK;
    pthread_mutex_unlock(&mdl->mu);
    return rc;
}

int gxd_model_plan(gxd_model *mdl, const gx_view *inputs, const gxd_compile_limits *lim,
                   gxd_plan **plan, bool *owned, int64_t *compile_us, char *err, size_t errlen)
{
    size_t n_in = mdl->graph->n_inputs;
    *plan = NULL;
    *owned = false;
    *compile_us = 0;
    if (n_in > GX_MAX_OP_INPUTS)
        return gx_errf(err, errlen, GX_ELIMIT, "graph has more than %d inputs", GX_MAX_OP_INPUTS);
    /* Compiling under the model's lock: concurrent jobs of a new shape wait
     * for the one compile instead of all doing it. */
    pthread_mutex_lock(&mdl->mu);
    int rc = GX_OK;
    for (size_t i = 0; i < mdl->n_plans; i++)
        if (gxd_plan_matches(mdl->plans[i], inputs)) {
            *plan = mdl->plans[i];
            goto out;
        }
    int64_t t0 = gxd_now_us();
    rc = gxd_compile(mdl->graph, inputs, lim, plan, err, errlen);
    *compile_us = gxd_now_us() - t0;
    if (rc < 0)
        goto out;
    /* measured times from the profile: the policy's estimates hold from
     * the first job */
    gxd_profile_seed(mdl->profile, *plan);
    /* A plan compiled without the values of its keyed inputs (at LOAD)
     * would serve every later job dynamically: it is not kept. */
    if (mdl->n_plans < GXD_MAX_PLANS_PER_MODEL && !(*plan)->needs_keys) {
        mdl->plans[mdl->n_plans++] = *plan;
    } else {
        *owned = true;
    }
out:
    pthread_mutex_unlock(&mdl->mu);
    return rc;
}
