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
