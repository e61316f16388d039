/*
 * The compiled subgraphs of a control-flow step (If's branches, Loop's
 * body). A subgraph is compiled when it first runs, for the signature of its
 * inputs at that time (declared inputs, then the values it captures), and
 * cached on the step for the jobs that follow. See compile.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

#define GXD_MAX_SUBGRAPHS 4 /* subgraph attributes per node */
#define GXD_MAX_SUBPLANS 16 /* cached plans per step */

typedef struct gxd_subgraph {
    const char *attr;
    const gx_graph *g;
    gxd_strv captured; /* its free names */
    int *pos;          /* step input index of each */
} gxd_subgraph;

struct gxd_subplans {
    size_t n_graphs;
    gxd_subgraph graph[GXD_MAX_SUBGRAPHS];
    pthread_mutex_t mu;
    const gxd_budget *budget; /* NULL: nothing counted */
    int64_t charged;          /* to budget, for the cached plans */
    size_t n;
    struct {
        const gx_graph *g;
        gxd_plan *plan;
    } cache[GXD_MAX_SUBPLANS];
};

gxd_subplans *gxd_subplans_new(const gxd_plan *p, const gxd_step *s, const gxd_budget *budget)
{
    gxd_subplans *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    pthread_mutex_init(&sp->mu, NULL);
    sp->budget = budget;
    const gx_node *n = s->node;
    for (size_t a = 0; a < n->n_attr; a++) {
        if (n->attr[a].type != GX_ATTR_GRAPH || sp->n_graphs == GXD_MAX_SUBGRAPHS)
            continue;
        gxd_subgraph *sg = &sp->graph[sp->n_graphs++];
        sg->attr = n->attr[a].name;
        sg->g = n->attr[a].g;
        if (gxd_free_names(sg->g, &sg->captured) < 0 ||
            !(sg->pos = calloc(sg->captured.n + 1, sizeof *sg->pos))) {
            gxd_subplans_destroy(&sp);
            return NULL;
        }
        /* verify resolved every free name among the step's extra inputs */
        for (size_t i = 0; i < sg->captured.n; i++)
            for (int k = s->n_formal; k < s->n_in; k++)
                if (strcmp(p->values[s->in[k]].name, sg->captured.v[i]) == 0)
                    sg->pos[i] = k;
    }
    return sp;
}

void gxd_subplans_destroy(gxd_subplans **spp)
{
    if (!spp || !*spp)
        return;
    gxd_subplans *sp = *spp;
    for (size_t i = 0; i < sp->n_graphs; i++) {
        free(sp->graph[i].captured.v);
        free(sp->graph[i].pos);
    }
    for (size_t i = 0; i < sp->n; i++)
        gxd_plan_destroy(&sp->cache[i].plan); /* theirs given back first */
    if (sp->budget && sp->charged)
        (void)sp->budget->charge(sp->budget->arg, -sp->charged, NULL, 0);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
    *spp = NULL;
}

static const gxd_subgraph *s_find(const gxd_subplans *sp, const gx_graph *g, const char *attr)
{
    for (size_t i = 0; i < sp->n_graphs; i++)
        if (sp->graph[i].g == g || (attr && strcmp(sp->graph[i].attr, attr) == 0))
            return &sp->graph[i];
    return NULL;
}

const gx_graph *gxd_subplans_graph(const gxd_subplans *sp, const char *attr, const int **pos,
                                   size_t *n)
{
    const gxd_subgraph *sg = s_find(sp, NULL, attr);
    if (!sg)
        return NULL;
    *pos = sg->pos;
    *n = sg->captured.n;
    return sg->g;
}

void gxd_subplans_consts(const gxd_plan *p, const gxd_step *s, const int *pos, size_t n,
                         bool *konst)
{
    for (size_t i = 0; i < n; i++) {
        const gxd_value *v = &p->values[s->in[pos[i]]];
        konst[i] = v->kind == GXD_VALUE_CONST && v->view.data && v->view.kind == GX_KIND_TENSOR;
    }
}

int gxd_subplans_get(gxd_subplans *sp, const gx_graph *g, const gx_view *inputs,
                     const bool *konst, const gxd_compile_limits *lim, gxd_plan **plan,
                     bool *owned, char *err, size_t errlen)
{
    const gxd_subgraph *sg = s_find(sp, g, NULL);
    *plan = NULL;
    *owned = false;
    if (!sg)
        return gx_errf(err, errlen, GX_EINTERNAL, "subgraph not found");
    pthread_mutex_lock(&sp->mu);
    int rc = GX_OK;
    for (size_t i = 0; i < sp->n; i++)
        if (sp->cache[i].g == g && gxd_plan_matches(sp->cache[i].plan, inputs)) {
            *plan = sp->cache[i].plan;
            goto out;
        }
    gxd_compile_limits slim = *lim;
    char what[160];
    const gxd_budget *b = sp->budget;
    if (b) { /* the subplan's own subplans are counted the same way */
        slim.budget = b;
        const int64_t room = b->room(b->arg, what, sizeof what);
        if (room > 0) {
            slim.max_plan_bytes = room;
            slim.max_plan_what = what;
        }
    }
    rc = gxd_compile_sub(g, sg->captured.v, konst, sg->captured.n, inputs, &slim, plan, err,
                         errlen);
    if (rc < 0)
        goto out;
    if (sp->n < GXD_MAX_SUBPLANS && !(*plan)->needs_keys) {
        const int64_t bytes = gxd_plan_mem_bytes(*plan);
        if (b && (rc = b->charge(b->arg, bytes, err, errlen)) < 0) {
            gxd_plan_destroy(plan);
            goto out;
        }
        sp->charged += b ? bytes : 0;
        sp->cache[sp->n].g = g;
        sp->cache[sp->n++].plan = *plan;
    } else {
        *owned = true;
    }
out:
    pthread_mutex_unlock(&sp->mu);
    return rc;
}

bool gxd_subplans_each(gxd_subplans *sp, bool try,
                       void (*fn)(void *arg, const char *attr, const gxd_plan *p), void *arg)
{
    if (try ? pthread_mutex_trylock(&sp->mu) != 0 : pthread_mutex_lock(&sp->mu) != 0)
        return false;
    for (size_t i = 0; i < sp->n; i++) {
        const gxd_subgraph *sg = s_find(sp, sp->cache[i].g, NULL);
        fn(arg, sg ? sg->attr : "?", sp->cache[i].plan);
    }
    pthread_mutex_unlock(&sp->mu);
    return true;
}
