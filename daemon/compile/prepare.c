/*
 * Pass 6, prepare (seed 004's library data). Contract: every CPU MatMul
 * or Gemm step whose B is a constant float32 matrix the packed kernels
 * take (ops/gemm.h) reads a copy of B packed into column panels, made here
 * once per plan and owned by it, and runs the packed kernel; every job and
 * worker shares that copy. Other steps are untouched. Runs after layout
 * (which packs a Conv's weights for its layout itself) and before fuse (an
 * epilogue's head runs the step's kernel). The plan of a slice of the
 * batch (replicas) borrows the whole batch's copy instead of packing its
 * own. Records each prepared constant for explain.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/gemm.h"
#include "ops/schema.h"

/* ---- the graph's table of shared copies (compile.h) ---- */

/* One shared copy: its data follow the header, GX_ALIGN-aligned. */
typedef struct s_blob {
    atomic_int refs;
    size_t bytes;
} s_blob;
#define S_BLOB_HEAD GX_ALIGN

static void *s_blob_data(s_blob *b)
{
    return (char *)b + S_BLOB_HEAD;
}

static void s_blob_unref(s_blob *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

/* A plan's reference (compile.h: plan->shared_refs). */
typedef struct gxd_shared_ref {
    s_blob *blob;
} gxd_shared_ref;

typedef struct s_entry {
    const void *src; /* the graph constant's data: stable while the graph lives */
    size_t src_bytes;
    gx_op op;
    bool trans_b;
    s_blob *blob;
} s_entry;

struct gxd_shared {
    pthread_mutex_t mu;
    s_entry *e;
    size_t n, cap;
};

gxd_shared *gxd_shared_new(void)
{
    gxd_shared *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

void gxd_shared_destroy(gxd_shared **sp)
{
    gxd_shared *s = *sp;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        s_blob_unref(s->e[i].blob);
    free(s->e);
    pthread_mutex_destroy(&s->mu);
    free(s);
    *sp = NULL;
}

void gxd_shared_drop(gxd_plan *p)
{
    for (size_t i = 0; i < p->n_shared_refs; i++)
        s_blob_unref(p->shared_refs[i].blob);
    free(p->shared_refs);
    p->shared_refs = NULL;
    p->n_shared_refs = 0;
}

/* The table's copy of b (a graph constant) packed for op, made with
 * gx_cpu_gemm_pack on a miss; a reference for p goes to p->shared_refs
 * (room for it reserved by the caller). NULL on ENOMEM. */
static float *s_shared_packed(gxd_shared *s, gxd_plan *p, const gxd_value *b, gx_op op,
                              const gx_attrval *attr, bool trans_b, size_t bytes)
{
    pthread_mutex_lock(&s->mu);
    s_blob *blob = NULL;
    for (size_t i = 0; i < s->n && !blob; i++)
        if (s->e[i].src == b->view.data && s->e[i].src_bytes == b->nbytes && s->e[i].op == op &&
            s->e[i].trans_b == trans_b)
            blob = s->e[i].blob;
    if (!blob && gx_grow(&s->e, &s->cap, s->n + 1, sizeof *s->e) &&
        (blob = gx_aligned_alloc(S_BLOB_HEAD + bytes))) {
        blob->bytes = bytes;
        atomic_init(&blob->refs, 1); /* the table's */
        gx_cpu_gemm_pack(op, attr, &b->view, s_blob_data(blob));
        s->e[s->n++] = (s_entry){b->view.data, b->nbytes, op, trans_b, blob};
    }
    if (blob) {
        atomic_fetch_add(&blob->refs, 1);
        p->shared_refs[p->n_shared_refs++] = (gxd_shared_ref){blob};
    }
    pthread_mutex_unlock(&s->mu);
    return blob ? s_blob_data(blob) : NULL;
}

/* Is v one of the graph's own constants (whose data live as long as the
 * graph), not one a pass made? */
static bool s_graph_const(const gx_graph *g, const gxd_value *v)
{
    for (size_t i = 0; i < g->n_consts; i++)
        if (g->consts[i].t->data == v->view.data)
            return true;
    return false;
}

/* ---- the pass ---- */

/* Is step s a candidate at all: a static, plain CPU step of its own. */
static bool s_plain_cpu(const gxd_plan *p, const gxd_step *s)
{
    return !s->folded && !s->copy && !s->reorder && !s->dynamic && !s->fused && !s->sub &&
           !s->kernel && s->layout == GX_LAYOUT_PLAIN && s->n_in >= 2 && s->in[1] >= 0 &&
           p->devices[s->device] == gx_backend_cpu();
}

static bool s_trans_b(gx_op op, const gx_attrval *attr)
{
    return op == GX_OP_GEMM && attr[GX_GEMM_TRANSB].i != 0;
}

/* The whole batch's packed copy of constant b for a step of op with these
 * attributes, or NULL: the same name and the same contents (a constant a
 * pass made, such as folded weights, is each plan's own copy). */
static void *s_borrow(const gxd_plan *whole, const gxd_value *b, gx_op op, const gx_attrval *attr)
{
    for (size_t i = 0; whole && i < whole->n_prepared; i++) {
        const gxd_prepared *r = &whole->prepared[i];
        const gxd_value *src = &whole->values[r->source];
        if (r->op == op && !strcmp(r->from, b->name) && src->nbytes == b->nbytes &&
            (src->view.data == b->view.data || !memcmp(src->view.data, b->view.data, b->nbytes)) &&
            r->trans_b == s_trans_b(op, attr))
            return whole->values[r->value].view.data;
    }
    return NULL;
}

int gxd_pass_prepare(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    size_t n_new = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        n_new += (s->op == GX_OP_MATMUL || s->op == GX_OP_GEMM) && s_plain_cpu(p, s);
    }
    if (!n_new)
        return GX_OK;
    gxd_value *vals = realloc(p->values, (p->n_values + n_new + 1) * sizeof *vals);
    gxd_prepared *rec = realloc(p->prepared, (p->n_prepared + n_new + 1) * sizeof *rec);
    gxd_shared_ref *refs =
        realloc(p->shared_refs, (p->n_shared_refs + n_new + 1) * sizeof *p->shared_refs);
    if (vals)
        p->values = vals;
    if (rec)
        p->prepared = rec;
    if (refs)
        p->shared_refs = refs;
    if (!vals || !rec || !refs)
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if ((s->op != GX_OP_MATMUL && s->op != GX_OP_GEMM) || !s_plain_cpu(p, s))
            continue;
        const gxd_value *b = &p->values[s->in[1]];
        char why[128];
        if (!gx_cpu_gemm_packable(s->op, s->attr, &p->values[s->in[0]].view, &b->view,
                                  &p->values[s->out[0]].view, b->kind == GXD_VALUE_CONST, why,
                                  sizeof why))
            continue;
        const size_t bytes = gx_cpu_gemm_packed_floats(s->op, s->attr, &b->view) * sizeof(float);
        const size_t len = strlen(b->name) + sizeof "@packed";
        char *name = gxd_plan_own(p, len);
        /* the graph's shared copy; else the whole batch's (a slice's plan);
         * else the plan's own */
        const bool shared = st->lim->shared && s_graph_const(st->g, b);
        float *packed = shared ? s_shared_packed(st->lim->shared, p, b, s->op, s->attr,
                                                 s_trans_b(s->op, s->attr), bytes)
                               : s_borrow(st->whole, b, s->op, s->attr);
        const bool borrowed = !shared && packed != NULL;
        if (!name || (!packed && (shared || !(packed = gxd_plan_own(p, bytes)))))
            return gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
        snprintf(name, len, "%s@packed", b->name);
        if (!borrowed && !shared)
            gx_cpu_gemm_pack(s->op, s->attr, &b->view, packed);
        /* B's view (logical shape) over the packed data (ops/gemm.h) */
        gxd_value *c = &p->values[p->n_values];
        *c = *b;
        c->name = name;
        c->keyed = false;
        c->view.data = packed;
        c->nbytes = bytes;
        c->def = -1;
        c->buffer = -1;
        c->offset = 0;
        p->prepared[p->n_prepared++] = (gxd_prepared){.node = s->node ? s->node->name : NULL,
                                                      .op = s->op,
                                                      .trans_b = s_trans_b(s->op, s->attr),
                                                      .from = b->name,
                                                      .value = (int)p->n_values,
                                                      .source = s->in[1],
                                                      .bytes = bytes,
                                                      .borrowed = borrowed,
                                                      .shared = shared};
        snprintf(p->prepared[p->n_prepared - 1].what, sizeof p->prepared[0].what,
                 "B in %d-column panels for the packed %s kernel (%s)%s", GX_GEMM_PANEL,
                 gx_op_name(s->op), gx_cpu_gemm_isa(),
                 shared     ? ", the graph's copy, shared by its plans"
                 : borrowed ? ", the whole batch's copy"
                            : "");
        p->prepared_bytes += borrowed || shared ? 0 : bytes; /* what the plan alone holds */
        s->in[1] = (int)p->n_values++;
        s->kernel = gx_cpu_gemm_packed_kernel(s->op);
    }
    return GX_OK;
}
