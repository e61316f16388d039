/* The pass list and the plan's lifetime. See compile.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/compile/layout.h"
#include "daemon/compile/passes.h"

static const struct {
    const char *name;
    int (*run)(gxd_cstate *st);
} s_passes[] = {
    {"verify", gxd_pass_verify},
    {"infer", gxd_pass_infer},
    {"widen", gxd_pass_widen},
    {"rewrite", gxd_pass_rewrite},
    {"partition", gxd_pass_partition},
    {"layout", gxd_pass_layout},
    {"prepare", gxd_pass_prepare},
    {"fuse", gxd_pass_fuse},
    {"memplan", gxd_pass_memplan},
    {"dag", gxd_pass_dag},
    {"batch", gxd_pass_batch},
    {"plan", gxd_pass_plan},
};

static uint64_t s_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

int gxd_names_get(const gxd_names *t, const char *name)
{
    if (!t->cap)
        return -1;
    for (size_t i = s_hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->key[i])
            return -1;
        if (strcmp(t->key[i], name) == 0)
            return t->val[i];
    }
}

bool gxd_names_put(gxd_names *t, const char *name, int val, bool *dup)
{
    *dup = false;
    if (!t->cap)
        return false;
    for (size_t i = s_hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->key[i]) {
            t->key[i] = name;
            t->val[i] = val;
            return true;
        }
        if (strcmp(t->key[i], name) == 0) {
            *dup = true;
            return false;
        }
    }
}

void *gxd_plan_own(gxd_plan *p, size_t nbytes)
{
    void *m = gx_aligned_alloc(nbytes ? nbytes : 1);
    if (!m)
        return NULL;
    memset(m, 0, nbytes ? nbytes : 1);
    if (!gx_grow(&p->owned, &p->cap_owned, p->n_owned + 1, sizeof *p->owned)) {
        free(m);
        return NULL;
    }
    p->owned[p->n_owned++] = m;
    p->owned_bytes += nbytes;
    return m;
}

bool gxd_plan_disown(gxd_plan *p, void *m, size_t nbytes)
{
    for (size_t i = p->n_owned; m && i-- > 0;)
        if (p->owned[i] == m) {
            free(m);
            p->owned[i] = p->owned[--p->n_owned];
            p->owned_bytes -= nbytes;
            return true;
        }
    return false;
}

int64_t gxd_plan_mem_bytes(const gxd_plan *p)
{
    return (int64_t)(sizeof *p + p->n_values * sizeof *p->values +
                     p->n_steps * (sizeof *p->steps + sizeof *p->stats + 64) + p->owned_bytes +
                     p->prepared_bytes + p->arena_bytes + p->dag_arena_bytes);
}

int gxd_plan_room(gxd_cstate *st, const char *pass, size_t more)
{
    const gxd_compile_limits *lim = st->lim;
    if (!lim || lim->max_plan_bytes <= 0)
        return GX_OK;
    const int64_t need = gxd_plan_mem_bytes(st->plan) + (int64_t)more;
    if (need <= lim->max_plan_bytes)
        return GX_OK;
    return gx_errf(st->err, st->errlen, GX_ELIMIT,
                   "the plan for these inputs needs %lld bytes by %s pass '%s' (one arena of %zu "
                   "among them), more than the %lld left to it under %s; nothing more allocated",
                   (long long)need, more ? "the allocation in" : "the end of", pass,
                   st->plan->arena_bytes, (long long)lim->max_plan_bytes,
                   lim->max_plan_what ? lim->max_plan_what : "its budget");
}

int gxd_step_move(gxd_plan *p, const char *what, int v, int c, gxd_step *s)
{
    gx_node *node = gxd_plan_own(p, sizeof *node);
    size_t len = strlen(p->values[c].name) + strlen(what) + 2;
    char *name = gxd_plan_own(p, len);
    memset(s, 0, sizeof *s);
    if (!node || !name || !(s->in = malloc(sizeof *s->in)) || !(s->out = malloc(sizeof *s->out)))
        return GX_ENOMEM;
    snprintf(name, len, "%s:%s", what, p->values[c].name);
    node->name = name;
    node->op = (char *)gx_op_name(GX_OP_IDENTITY);
    s->op = GX_OP_IDENTITY;
    s->node = node;
    s->n_in = s->n_out = s->n_formal = 1;
    s->in[0] = v;
    s->out[0] = c;
    s->cost = (gx_cost){0, 2.0 * (double)p->values[v].nbytes};
    s->scratch = -1;
    s->part = -1;
    return GX_OK;
}

/* Slice plans of one plan, by the slice's size on axis 0. */
#define GXD_MAX_SLICES 8

typedef struct gxd_slices {
    pthread_mutex_t mu;
    size_t n;
    int64_t size[GXD_MAX_SLICES];
    gxd_plan *plan[GXD_MAX_SLICES]; /* NULL: the compile failed with rc[], why[] */
    int rc[GXD_MAX_SLICES];
    char why[GXD_MAX_SLICES][256];
    atomic_bool failed; /* a slice's compile failed (not for memory) */
} gxd_slices;

gxd_slices *gxd_slices_new(void)
{
    gxd_slices *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

static void s_slices_destroy(gxd_slices **sp)
{
    gxd_slices *s = *sp;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        gxd_plan_destroy(&s->plan[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
    *sp = NULL;
}

void gxd_plan_destroy(gxd_plan **pp)
{
    if (!pp || !*pp)
        return;
    gxd_plan *p = *pp;
    for (size_t i = 0; i < p->n_steps; i++) {
        free(p->steps[i].in);
        free(p->steps[i].out);
        free(p->steps[i].succ);
        gxd_subplans_destroy(&p->steps[i].sub);
        free(p->steps[i].fused);
    }
    for (size_t i = 0; i < p->n_fuse_groups; i++) {
        free(p->fuse_groups[i].nodes);
        free(p->fuse_groups[i].ops);
        free(p->fuse_groups[i].why);
    }
    free(p->fuse_groups);
    free(p->prepared);
    gxd_shared_drop(p);
    gxd_layout_rec_destroy(&p->layout);
    for (size_t i = 0; i < p->n_dev_consts; i++) {
        const gxd_dev_const *c = &p->dev_consts[i];
        const gx_backend *b = p->devices[c->device];
        b->free(b, p->values[c->value].view.data);
    }
    free(p->dev_consts);
    for (size_t i = 0; i < p->n_owned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p->dag_offset);
    free(p->parts);
    free(p->fell);
    free(p->stats);
    s_slices_destroy(&p->slices);
    gxd_plan_graphs_free(p);
    free(p->steps);
    free(p->values);
    free(p->inputs);
    free(p->outputs);
    free(p);
    *pp = NULL;
}

gxd_plan *gxd_plan_ref(gxd_plan *p)
{
    atomic_fetch_add(&p->refs, 1);
    return p;
}

void gxd_plan_release(gxd_plan **pp)
{
    if (!pp || !*pp)
        return;
    gxd_plan *p = *pp;
    *pp = NULL;
    if (atomic_fetch_sub(&p->refs, 1) == 0)
        gxd_plan_destroy(&p);
}

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The first npasses passes over st (a fresh plan); GX_OK or the first
 * error, the plan left as it is. */
static int s_passes_run(gxd_cstate *st, size_t npasses)
{
    int rc = GX_ENOMEM;
    st->names = (gxd_names){0};
    if (!(st->plan = calloc(1, sizeof *st->plan)) || !(st->plan->slices = gxd_slices_new())) {
        free(st->plan);
        st->plan = NULL;
        return gx_errf(st->err, st->errlen, rc, "out of memory");
    }
    const gxd_compile_limits *lim = st->lim;
    int64_t t0 = s_now_us();
    for (size_t i = 0; i < npasses; i++) {
        if ((rc = s_passes[i].run(st)) < 0 ||
            (rc = gxd_plan_room(st, s_passes[i].name, 0)) < 0)
            break;
        int64_t took = s_now_us() - t0;
        if (lim && lim->max_compile_us > 0 && took > lim->max_compile_us && i + 1 < npasses) {
            rc = gx_errf(st->err, st->errlen, GX_ELIMIT,
                         "compiling the graph took %lld ms by the end of pass '%s', more than "
                         "limits.max_compile_ms (%lld)",
                         (long long)(took / 1000), s_passes[i].name,
                         (long long)(lim->max_compile_us / 1000));
            break;
        }
    }
    free(st->names.key);
    free(st->names.val);
    return rc;
}

static int s_run(const gx_graph *g, const char *const *captured, const bool *konst,
                 size_t n_captured, const gx_view *inputs, const gxd_plan *whole,
                 const gxd_compile_limits *lim, size_t npasses, gxd_plan **out, char *err,
                 size_t errlen)
{
    gxd_cstate st = {.g = g, .lim = lim, .inputs = inputs, .captured = captured,
                     .captured_const = konst, .n_captured = n_captured, .slice = whole != NULL,
                     .whole = whole, .err = err, .errlen = errlen};
    *out = NULL;
    int rc = s_passes_run(&st, npasses);
    if (rc < 0 && st.half_left) {
        /* a device half step no device took (partition.c): again, every
         * such step widened */
        gxd_plan_destroy(&st.plan);
        st.no_dev_half = true;
        st.half_left = false;
        rc = s_passes_run(&st, npasses);
    }
    if (rc < 0)
        gxd_plan_destroy(&st.plan);
    *out = st.plan;
    return rc;
}

int gxd_verify_sub(const gx_graph *g, const char *const *captured, size_t n_captured,
                   const gxd_compile_limits *lim, char *err, size_t errlen)
{
    gxd_plan *p = NULL;
    int rc = s_run(g, captured, NULL, n_captured, NULL, NULL, lim, 1, &p, err, errlen);
    gxd_plan_destroy(&p);
    return rc;
}

int gxd_verify(const gx_graph *g, const gxd_compile_limits *lim, char *err, size_t errlen)
{
    return gxd_verify_sub(g, NULL, 0, lim, err, errlen);
}

int gxd_verify_keyed(const gx_graph *g, const gxd_compile_limits *lim, bool *keyed, char *err,
                     size_t errlen)
{
    gxd_plan *p = NULL;
    int rc = s_run(g, NULL, NULL, 0, NULL, NULL, lim, 1, &p, err, errlen);
    for (size_t i = 0; rc == GX_OK && i < p->n_inputs && i < g->n_inputs; i++)
        keyed[i] = p->values[p->inputs[i]].keyed;
    gxd_plan_destroy(&p);
    return rc;
}

int gxd_compile_sub(const gx_graph *g, const char *const *captured, const bool *konst,
                    size_t n_captured, const gx_view *inputs, const gxd_compile_limits *lim,
                    gxd_plan **out, char *err, size_t errlen)
{
    return s_run(g, captured, konst, n_captured, inputs, NULL, lim,
                 sizeof s_passes / sizeof s_passes[0], out, err, errlen);
}

int gxd_compile(const gx_graph *g, const gx_view *inputs, const gxd_compile_limits *lim,
                gxd_plan **out, char *err, size_t errlen)
{
    return gxd_compile_sub(g, NULL, NULL, 0, inputs, lim, out, err, errlen);
}

int gxd_plan_slice(gxd_plan *p, const gx_graph *g, const gx_view *inputs,
                   const gxd_compile_limits *lim, gxd_plan **out, bool *owned, char *err,
                   size_t errlen)
{
    bool compiled;
    return gxd_plan_slice_stored(p, g, inputs, lim, NULL, out, owned, &compiled, err, errlen);
}

int gxd_plan_slice_stored(gxd_plan *p, const gx_graph *g, const gx_view *inputs,
                          const gxd_compile_limits *lim, const gxd_slice_store *store,
                          gxd_plan **out, bool *owned, bool *compiled, char *err, size_t errlen)
{
    gxd_slices *s = p->slices;
    int64_t size = -1;
    for (size_t i = 0; i < p->n_inputs && size < 0; i++) {
        const gxd_value *v = &p->values[p->inputs[i]];
        if (!v->keyed && v->view.ndim >= 1)
            size = inputs[i].shape[0];
    }
    *owned = false;
    *compiled = false;
    pthread_mutex_lock(&s->mu);
    int rc = GX_OK;
    for (size_t i = 0; i < s->n; i++)
        if (s->size[i] == size) {
            if (!(*out = s->plan[i]))
                rc = gx_errf(err, errlen, s->rc[i], "%s", s->why[i]);
            goto out;
        }
    if (!store || !(*out = store->load(store->arg, p, inputs, size))) {
        rc = s_run(g, NULL, NULL, 0, inputs, p, lim, sizeof s_passes / sizeof s_passes[0], out,
                   err, errlen);
        *compiled = true;
        /* saved when the cache keeps it (a store's writer may read it later) */
        if (rc == GX_OK && store && s->n < GXD_MAX_SLICES)
            store->save(store->arg, p, *out, size);
    }
    if (s->n == GXD_MAX_SLICES) {
        *owned = rc == GX_OK;
    } else if (rc != GX_ENOMEM) { /* failures are remembered too: not retried per job */
        s->size[s->n] = size;
        s->plan[s->n] = *out;
        s->rc[s->n] = rc;
        snprintf(s->why[s->n], sizeof s->why[s->n], "%s", rc < 0 ? err : "");
        s->n++;
        if (rc < 0)
            atomic_store_explicit(&s->failed, true, memory_order_relaxed);
    }
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

bool gxd_plan_slices_failed(const gxd_plan *p)
{
    return p->slices && atomic_load_explicit(&p->slices->failed, memory_order_relaxed);
}

bool gxd_plan_matches(const gxd_plan *p, const gx_view *inputs)
{
    for (size_t i = 0; i < p->n_inputs; i++) {
        const gxd_value *v = &p->values[p->inputs[i]];
        const gx_view *a = &v->view, *b = &inputs[i];
        if (a->kind != b->kind || a->dtype != b->dtype || a->ndim != b->ndim ||
            a->layout != b->layout ||
            memcmp(a->shape, b->shape, (size_t)(a->ndim > 0 ? a->ndim : 0) * sizeof *a->shape))
            return false;
        if (v->keyed && (!b->data || memcmp(a->data, b->data, v->nbytes)))
            return false;
        if (v->kind == GXD_VALUE_CONST && a->data != b->data) /* a captured constant */
            return false;
    }
    return true;
}

bool gxd_plan_off_host(const gxd_plan *plan)
{
    if (plan->n_devices < 2) /* the CPU alone: nothing to look at */
        return false;
    for (size_t i = 0; i < plan->n_steps; i++)
        if (!plan->steps[i].folded && !plan->devices[plan->steps[i].device]->host_memory)
            return true;
    return false;
}

void gxd_plan_devices(const gxd_plan *plan, char *buf, size_t len)
{
    bool runs[GXD_MAX_DEVICES] = {false};
    for (size_t i = 0; i < plan->n_steps; i++)
        runs[plan->steps[i].device] |= !plan->steps[i].folded && !plan->steps[i].copy;
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 1; k <= plan->n_devices && o < len; k++) {
        const size_t d = k % plan->n_devices; /* the fallback last */
        if (runs[d] || (d == 0 && !o))
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "+" : "", plan->devices[d]->name);
    }
}
