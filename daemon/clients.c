/* Per-client limits on loaded graphs. See clients.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gexec/status.h>

#include "daemon/clients.h"

void gxd_clients_init(gxd_clients *cs, size_t max_graphs, int64_t max_bytes)
{
    memset(cs, 0, sizeof *cs);
    gxd_clients_set_limits(cs, max_graphs, max_bytes);
}

void gxd_clients_fini(gxd_clients *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        free(cs->v[i].holds);
    free(cs->v);
    memset(cs, 0, sizeof *cs);
}

void gxd_clients_set_limits(gxd_clients *cs, size_t max_graphs, int64_t max_bytes)
{
    cs->max_graphs = max_graphs;
    cs->max_bytes = max_bytes;
}

static gxd_client *s_find(gxd_clients *cs, const void *identity, size_t identity_len)
{
    for (size_t i = 0; i < cs->n; i++)
        if (cs->v[i].identity_len == identity_len &&
            memcmp(cs->v[i].identity, identity, identity_len) == 0)
            return &cs->v[i];
    return NULL;
}

/* The model a hold names, when it is still the one in the registry. */
static gxd_model *s_model(gxd_models *m, const gxd_client_hold *h)
{
    gxd_model *mdl = gxd_models_peek(m, h->id.hex);
    return mdl && mdl->serial == h->serial ? mdl : NULL;
}

/* Does a client other than c (NULL: any) hold what h names? */
static bool s_shared(const gxd_clients *cs, const gxd_client *c, const gxd_client_hold *h)
{
    for (size_t i = 0; i < cs->n; i++)
        for (size_t k = 0; &cs->v[i] != c && k < cs->v[i].n; k++)
            if (cs->v[i].holds[k].serial == h->serial &&
                strcmp(cs->v[i].holds[k].id.hex, h->id.hex) == 0)
                return true;
    return false;
}

/* Forget c's holds of graphs no longer in the registry; *bytes: the bytes
 * of the graphs c alone holds (a shared one is charged to no client, only
 * to limits.max_memory_bytes). */
static void s_prune(const gxd_clients *cs, gxd_models *m, gxd_client *c, int64_t *bytes)
{
    *bytes = 0;
    for (size_t i = 0; i < c->n;) {
        gxd_model *mdl = s_model(m, &c->holds[i]);
        if (!mdl) {
            c->holds[i] = c->holds[--c->n];
            continue;
        }
        if (!s_shared(cs, c, &c->holds[i]))
            *bytes += atomic_load(&mdl->bytes);
        i++;
    }
}

/* Unload c's least recently used graph that no job runs and no other
 * client holds; false when there is none. */
static bool s_evict_own(gxd_clients *cs, gxd_models *m, gxd_client *c)
{
    size_t best = c->n;
    gxd_model *victim = NULL;
    for (size_t i = 0; i < c->n; i++) {
        gxd_model *mdl = s_model(m, &c->holds[i]);
        if (mdl && atomic_load(&mdl->refs) == 1 && !s_shared(cs, c, &c->holds[i]) &&
            (!victim || mdl->last_used < victim->last_used)) {
            victim = mdl;
            best = i;
        }
    }
    if (!victim)
        return false;
    c->holds[best] = c->holds[--c->n];
    gxd_models_unload(m, victim); /* idle: freed now */
    return true;
}

int gxd_clients_check(gxd_clients *cs, gxd_models *m, const void *identity, size_t identity_len,
                      const gx_graph_id *id, int64_t new_bytes, char *err, size_t errlen)
{
    gxd_client *c = s_find(cs, identity, identity_len);
    int64_t held = 0;
    if (c)
        s_prune(cs, m, c, &held);
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->holds[i].id.hex, id->hex) == 0)
            return GX_OK;
    gxd_model *mdl = gxd_models_peek(m, id->hex);
    /* a graph another client holds becomes shared: it adds nothing */
    const gxd_client_hold h = {.id = *id, .serial = mdl ? mdl->serial : 0};
    int64_t need = !mdl ? new_bytes : s_shared(cs, c, &h) ? 0 : atomic_load(&mdl->bytes);
    /* beyond a bound, the client's own idle graphs go first, LRU */
    while (c && ((cs->max_graphs && c->n >= cs->max_graphs) ||
                 (cs->max_bytes > 0 && held + need > cs->max_bytes)) &&
           s_evict_own(cs, m, c))
        s_prune(cs, m, c, &held);
    size_t n = c ? c->n : 0;
    if (cs->max_graphs && n >= cs->max_graphs)
        return gx_errf(err, errlen, GX_ELIMIT,
                       "this client holds %zu graphs in use or shared and limits.client_graphs "
                       "is %zu; UNLOAD one before loading another",
                       n, cs->max_graphs);
    if (cs->max_bytes > 0 && held + need > cs->max_bytes)
        return gx_errf(err, errlen, GX_ELIMIT,
                       "the graph holds %lld bytes and the graphs and plans this client alone "
                       "holds, in use, %lld; limits.client_memory_bytes is %lld; UNLOAD a graph "
                       "before loading another",
                       (long long)need, (long long)held, (long long)cs->max_bytes);
    return GX_OK;
}

int gxd_clients_hold(gxd_clients *cs, const void *identity, size_t identity_len,
                     const gxd_model *mdl)
{
    if (identity_len > GXD_MAX_IDENTITY)
        return GX_EINVAL;
    gxd_client *c = s_find(cs, identity, identity_len);
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->holds[i].id.hex, mdl->id.hex) == 0) {
            c->holds[i].serial = mdl->serial;
            return GX_OK;
        }
    if (!c) {
        if (!gx_grow(&cs->v, &cs->cap, cs->n + 1, sizeof *cs->v))
            return GX_ENOMEM;
        c = &cs->v[cs->n++];
        memset(c, 0, sizeof *c);
        memcpy(c->identity, identity, identity_len);
        c->identity_len = identity_len;
    }
    if (!gx_grow(&c->holds, &c->cap, c->n + 1, sizeof *c->holds))
        return GX_ENOMEM;
    c->holds[c->n++] = (gxd_client_hold){.id = mdl->id, .serial = mdl->serial};
    return GX_OK;
}

void gxd_clients_usage(gxd_clients *cs, gxd_models *m, const void *identity, size_t identity_len,
                       size_t *graphs, int64_t *bytes)
{
    gxd_client *c = s_find(cs, identity, identity_len);
    *graphs = 0;
    *bytes = 0;
    if (c) {
        s_prune(cs, m, c, bytes);
        *graphs = c->n;
    }
}

void gxd_clients_drop(gxd_clients *cs, const void *identity, size_t identity_len)
{
    gxd_client *c = s_find(cs, identity, identity_len);
    if (!c)
        return;
    free(c->holds);
    *c = cs->v[--cs->n];
}
