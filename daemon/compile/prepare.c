/*
 * Pass 6, prepare (seed 004's library data). Contract: every MatMul or
 * Gemm step on a device with packed operands (its table's gemm_pack: the
 * CPU) whose B is a constant float32 matrix the packed kernels
 * take (ops/gemm.h) reads a copy of B packed into column panels and runs
 * the packed kernel; every Conv step the layout pass put in a layout of
 * its own (NHWC, NCHW16c) reads its weights packed for that layout's
 * kernel (ops/layout.h), which it needs; every MatMulInteger,
 * QLinearMatMul and QLinearConv step on a device with packed integer
 * operands (qgemm_pack) whose B (W) is a constant its packed kernel takes
 * (ops/qgemm.h) reads it packed and runs that kernel, as does a
 * QLinearConv the layout pass put in NHWC (its own kernel). Each copy is made here once and
 * shared by every job and worker: a graph constant's copy is the graph's
 * (one per source and form, for all its plans: input shapes, batch
 * slices, re-plans), another constant's (folded weights, a keyed input)
 * is the plan's own, or the whole batch's for the plan of a slice of the
 * batch (replicas). Other steps are untouched. Runs after layout (which
 * picks the Conv kernels) and before fuse (an epilogue's head runs the
 * step's kernel). Records each prepared constant for explain. Last, the
 * plan's own constants no step reads any more (a float16 model's float32
 * twins, now packed) are freed (s_free_dead), counted for explain.
 *
 * Which product kernel (seed 003): the tune registry (lim->tune,
 * daemon/tune/tune.h) is asked once per plan for all of them; a record
 * names the winner (a packed kernel on some ISA; or one that reads B as it
 * is, OpenBLAS or the plain-B kernel: then nothing is packed); a miss runs
 * the default, the packed kernel on the ISA in use, and the registry
 * explores the signature on idle time. p->impls records each choice and
 * where it came from, for explain and the re-planner. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "daemon/profile.h"
#include "daemon/tune/tune.h"
#include "ops/gemm.h"
#include "ops/layout.h"
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

/* How a constant is prepared: for op's kernel, with Gemm's transB or in
 * a Conv's layout; attr: the step's resolved attributes. */
typedef struct s_form {
    const gx_backend *dev; /* whose kernel reads it */
    gx_op op;
    bool trans_b;
    gx_layout layout;
    const gx_attrval *attr;
} s_form;

typedef struct s_entry {
    const void *src; /* the graph constant's data: stable while the graph lives */
    size_t src_bytes;
    const gx_backend *dev;
    gx_op op;
    bool trans_b;
    gx_layout layout;
    s_blob *blob;
} s_entry;

struct gxd_shared {
    pthread_mutex_t mu;
    s_entry *e;
    size_t n, cap;
    int64_t bytes; /* the copies' data */
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

int64_t gxd_shared_bytes(gxd_shared *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    const int64_t b = s->bytes;
    pthread_mutex_unlock(&s->mu);
    return b;
}

void *gxd_shared_get(gxd_shared *s, gxd_plan *p, const void *src, size_t src_bytes,
                     const gx_backend *dev, gx_op op, bool trans_b, gx_layout layout,
                     size_t bytes, int (*fill)(void *arg, void *dst), void *arg,
                     const gxd_budget *budget, int *rc, char *err, size_t errlen)
{
    gxd_shared_ref *refs = realloc(p->shared_refs, (p->n_shared_refs + 1) * sizeof *refs);
    *rc = GX_OK;
    if (!refs) {
        *rc = GX_ENOMEM;
        return NULL;
    }
    p->shared_refs = refs;
    pthread_mutex_lock(&s->mu);
    s_blob *blob = NULL;
    for (size_t i = 0; i < s->n && !blob; i++)
        if (s->e[i].src == src && s->e[i].src_bytes == src_bytes && s->e[i].dev == dev &&
            s->e[i].op == op && s->e[i].trans_b == trans_b && s->e[i].layout == layout) {
            blob = s->e[i].blob;
            if (blob->bytes != bytes) { /* not the same form: the caller's own copy */
                pthread_mutex_unlock(&s->mu);
                return NULL;
            }
        }
    if (!blob) {
        if (budget && (*rc = budget->charge(budget->arg, (int64_t)bytes, err, errlen)) < 0)
            goto out;
        if (!gx_grow(&s->e, &s->cap, s->n + 1, sizeof *s->e) ||
            !(blob = gx_aligned_alloc(S_BLOB_HEAD + bytes)))
            *rc = GX_ENOMEM;
        else if ((*rc = fill(arg, s_blob_data(blob))) < 0) {
            free(blob);
            blob = NULL;
        }
        if (!blob) {
            if (budget)
                (void)budget->charge(budget->arg, -(int64_t)bytes, NULL, 0);
            goto out;
        }
        blob->bytes = bytes;
        atomic_init(&blob->refs, 1); /* the table's */
        s->e[s->n++] = (s_entry){src, src_bytes, dev, op, trans_b, layout, blob};
        s->bytes += (int64_t)bytes;
    }
    atomic_fetch_add(&blob->refs, 1);
    p->shared_refs[p->n_shared_refs++] = (gxd_shared_ref){blob};
out:
    pthread_mutex_unlock(&s->mu);
    return blob ? s_blob_data(blob) : NULL;
}

void gxd_shared_drop(gxd_plan *p)
{
    for (size_t i = 0; i < p->n_shared_refs; i++)
        s_blob_unref(p->shared_refs[i].blob);
    free(p->shared_refs);
    p->shared_refs = NULL;
    p->n_shared_refs = 0;
}

/* Is op one of the integer products (qgemm_pack)? */
static bool s_qop(gx_op op)
{
    return op == GX_OP_MATMUL_INTEGER || op == GX_OP_QLINEAR_MATMUL || op == GX_OP_QLINEAR_CONV ||
           op == GX_OP_CONVINTEGER;
}

/* b's view in form f (*pv: dtype and shape, data untouched) and its bytes. */
static size_t s_form_view(const s_form *f, const gx_view *b, gx_view *pv)
{
    if (s_qop(f->op)) {
        *pv = *b; /* as for the float32 products */
        return f->dev->qgemm_pack->packed_bytes(f->op, b);
    }
    if (f->op == GX_OP_CONV) {
        f->dev->layouts->conv_pack_shape(f->layout, f->attr, b, pv);
        return (size_t)pv->numel * gx_dtype_size(pv->dtype);
    }
    *pv = *b; /* the packed kernels see B's logical shape (ops/gemm.h) */
    return f->dev->gemm_pack->packed_floats(f->op, f->attr, b) * sizeof(float);
}

size_t gxd_prepare_bytes(const gx_backend *dev, gx_op op, bool trans_b, gx_layout layout,
                         const gx_attrval *attr, const gx_view *b)
{
    const s_form f = {dev, op, trans_b, layout, attr};
    /* W of a convolution [M, C, kh, kw], B of a product a matrix */
    const bool conv = op == GX_OP_CONV || op == GX_OP_QLINEAR_CONV || op == GX_OP_CONVINTEGER;
    if (!dev || b->ndim != (conv ? 4 : 2) ||
        (s_qop(op) ? !dev->qgemm_pack
                   : conv ? !dev->layouts
                          : !dev->gemm_pack || (op != GX_OP_GEMM && op != GX_OP_MATMUL)))
        return 0;
    for (int d = 0; d < b->ndim; d++)
        if (b->shape[d] < 1)
            return 0;
    gx_view pv;
    return s_form_view(&f, b, &pv);
}

/* Writes b in form f (view pv of s_form_view) to dst. */
static void s_form_fill(const s_form *f, const gx_view *b, gx_view pv, void *dst)
{
    if (s_qop(f->op)) {
        f->dev->qgemm_pack->pack(f->op, b, dst);
    } else if (f->op == GX_OP_CONV) {
        pv.data = dst;
        f->dev->layouts->conv_pack(f->layout, f->attr, b, &pv);
    } else {
        f->dev->gemm_pack->pack(f->op, f->attr, b, dst);
    }
}

/* The table's copy of b (a graph constant) in form f (view pv, bytes),
 * made on a miss and charged to the compile's budget; a reference for p
 * goes to p->shared_refs (room for it reserved by the caller). NULL with
 * *rc GX_ENOMEM, or GX_ELIMIT (st->err filled) when the budget cannot
 * take a new copy. */
static void *s_shared_copy(gxd_cstate *st, gxd_shared *s, gxd_plan *p, const gxd_value *b,
                           const s_form *f, gx_view pv, size_t bytes, int *rc)
{
    const gxd_budget *budget = st->lim->budget;
    pthread_mutex_lock(&s->mu);
    s_blob *blob = NULL;
    *rc = GX_OK;
    for (size_t i = 0; i < s->n && !blob; i++)
        if (s->e[i].src == b->view.data && s->e[i].src_bytes == b->nbytes &&
            s->e[i].dev == f->dev && s->e[i].op == f->op && s->e[i].trans_b == f->trans_b &&
            s->e[i].layout == f->layout)
            blob = s->e[i].blob;
    if (!blob && budget &&
        (*rc = budget->charge(budget->arg, (int64_t)bytes, st->err, st->errlen)) < 0) {
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    if (!blob && gx_grow(&s->e, &s->cap, s->n + 1, sizeof *s->e) &&
        (blob = gx_aligned_alloc(S_BLOB_HEAD + bytes))) {
        blob->bytes = bytes;
        atomic_init(&blob->refs, 1); /* the table's */
        s_form_fill(f, &b->view, pv, s_blob_data(blob));
        s->e[s->n++] = (s_entry){b->view.data, b->nbytes, f->dev, f->op, f->trans_b, f->layout,
                                  blob};
        s->bytes += (int64_t)bytes;
    } else if (!blob) {
        if (budget) /* charged above */
            (void)budget->charge(budget->arg, -(int64_t)bytes, NULL, 0);
        *rc = GX_ENOMEM;
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

/* Is step s a candidate for the packed products: a static, plain CPU
 * MatMul or Gemm step of its own whose kernel nothing chose yet. */
static bool s_product_step(const gxd_plan *p, const gxd_step *s)
{
    return (s->op == GX_OP_MATMUL || s->op == GX_OP_GEMM) && !s->folded && !s->copy &&
           !s->reorder && !s->dynamic && !s->fused && !s->sub && !s->kernel &&
           s->layout == GX_LAYOUT_PLAIN && s->n_in >= 2 && s->in[1] >= 0 &&
           p->devices[s->device]->gemm_pack;
}

static bool s_trans_b(gx_op op, const gx_attrval *attr)
{
    return op == GX_OP_GEMM && attr[GX_GEMM_TRANSB].i != 0;
}

/* A float32 Conv left in the plain layout, on the CPU (the registry's
 * candidates are CPU kernels): the registry chooses its kernel (seed
 * 003); the blocked layouts' kernels are the layout pass's choice. */
static bool s_tuned_conv(const gxd_plan *p, const gxd_step *s)
{
    return s->op == GX_OP_CONV && s->layout == GX_LAYOUT_PLAIN && !s->folded && !s->copy &&
           !s->reorder && !s->dynamic && !s->fused && !s->sub && !s->kernel && s->n_in >= 2 &&
           s->in[1] >= 0 && s->n_out == 1 && p->devices[s->device]->gemm_pack &&
           p->values[s->in[0]].view.dtype == GX_F32;
}

/* A Conv in a layout of its own: its kernel (the layout pass's) reads the
 * weights packed. */
static bool s_layout_conv(const gxd_plan *p, const gxd_step *s)
{
    return s->op == GX_OP_CONV && s->layout != GX_LAYOUT_PLAIN && !s->folded && !s->fused &&
           s->n_in >= 2 && s->in[1] >= 0 && p->devices[s->device]->layouts &&
           p->devices[s->device]->layouts->conv_pack;
}

#define S_MAX_QIN 9 /* QLinearConv's inputs */

/* A QLinearConv the layout pass put in NHWC: its kernel (the layout
 * pass's) reads W in the qgemm packed form (ops/layout.h). */
static bool s_layout_qconv(const gxd_plan *p, const gxd_step *s)
{
    return s->op == GX_OP_QLINEAR_CONV && s->layout != GX_LAYOUT_PLAIN && !s->folded &&
           !s->fused && s->n_in > 3 && s->in[3] >= 0 &&
           p->values[s->in[3]].kind == GXD_VALUE_CONST && p->devices[s->device]->qgemm_pack;
}

/* An integer product whose B (W) its device's packed kernel takes. */
static bool s_qproduct_step(const gxd_plan *p, const gxd_step *s)
{
    const gx_backend_qgemm_pack *q = p->devices[s->device]->qgemm_pack;
    if (!q || !s_qop(s->op) || s->folded || s->copy || s->reorder || s->dynamic || s->fused ||
        s->sub || s->kernel || s->layout != GX_LAYOUT_PLAIN || s->n_in > S_MAX_QIN)
        return false;
    const int ib = q->b_input(s->op);
    if (s->n_in <= ib || s->in[ib] < 0)
        return false;
    gx_view in[S_MAX_QIN];
    for (int i = 0; i < s->n_in; i++)
        in[i] = s->in[i] >= 0 ? p->values[s->in[i]].view : (gx_view){.ndim = -1};
    char why[96];
    return q->packable(s->op, s->attr, s->n_in, in, &p->values[s->out[0]].view,
                       p->values[s->in[ib]].kind == GXD_VALUE_CONST, why, sizeof why);
}

/* Is copy c (a prepared constant) b in form f? (b in form f made here
 * and compared: for a source the plan freed, s_free_dead.) */
static bool s_same_form(const s_form *f, const gxd_value *b, const gxd_value *c)
{
    gx_view pv;
    const size_t bytes = s_form_view(f, &b->view, &pv);
    void *tmp = bytes == c->nbytes && c->view.data ? gx_aligned_alloc(bytes + 1) : NULL;
    if (!tmp)
        return false; /* (out of memory: the plan makes its own copy, also right) */
    s_form_fill(f, &b->view, pv, tmp);
    const bool same = !memcmp(tmp, c->view.data, bytes);
    free(tmp);
    return same;
}

/* The whole batch's copy of constant b in form f, or NULL: the same name
 * and the same contents (a constant a pass made, such as folded weights,
 * is each plan's own copy); where the whole batch's plan freed its source
 * (s_free_dead), the same bytes in form f. */
static void *s_borrow(const gxd_plan *whole, const gxd_value *b, const s_form *f)
{
    for (size_t i = 0; whole && i < whole->n_prepared; i++) {
        const gxd_prepared *r = &whole->prepared[i];
        const gxd_value *src = &whole->values[r->source];
        if (r->op != f->op || r->trans_b != f->trans_b || r->layout != f->layout ||
            strcmp(r->from, b->name) || src->nbytes != b->nbytes)
            continue;
        if (src->view.data ? src->view.data == b->view.data ||
                                 !memcmp(src->view.data, b->view.data, b->nbytes)
                           : s_same_form(f, b, &whole->values[r->value]))
            return whole->values[r->value].view.data;
    }
    return NULL;
}

/* After the pass: the plan's own constants that no step reads and that
 * are no output (a float16 model's float32 twins whose readers now read
 * them packed, the weights a fold replaced) are freed; their values stay
 * (names, shapes, the records that name them) with no data. Counted in
 * p->freed_consts and freed_const_bytes; the plan's memory no longer
 * holds them (gxd_plan_mem_bytes). */
static int s_free_dead(gxd_plan *p)
{
    bool *read = calloc(p->n_values + 1, sizeof *read);
    if (!read)
        return GX_ENOMEM;
    for (size_t i = 0; i < p->n_steps; i++)
        for (int k = 0; k < p->steps[i].n_in; k++)
            if (p->steps[i].in[k] >= 0)
                read[p->steps[i].in[k]] = true;
    for (size_t i = 0; i < p->n_outputs; i++)
        read[p->outputs[i]] = true;
    for (size_t v = 0; v < p->n_values; v++) {
        gxd_value *c = &p->values[v];
        if (c->kind != GXD_VALUE_CONST || read[v] || !c->view.data || c->keyed ||
            c->view.dtype == GX_STRING || !gxd_plan_disown(p, c->view.data, c->nbytes))
            continue;
        c->view.data = NULL;
        p->freed_consts++;
        p->freed_const_bytes += c->nbytes;
    }
    free(read);
    return GX_OK;
}

/* Step s reads its input at (b) in form f from now on: the graph's
 * shared copy, the whole batch's, or the plan's own; a new constant value
 * named "<b>@<tag>" and a record (what: the form, for explain). */
static int s_prepare_input(gxd_cstate *st, gxd_step *s, int at, const s_form *f,
                           const char *tag, const char *what)
{
    gxd_plan *p = st->plan;
    const gxd_value *b = &p->values[s->in[at]];
    gx_view pv;
    const size_t bytes = s_form_view(f, &b->view, &pv);
    const size_t len = strlen(b->name) + strlen(tag) + 2;
    char *name = gxd_plan_own(p, len);
    const bool shared = st->lim->shared && s_graph_const(st->g, b);
    int rc = GX_OK;
    void *data = shared ? s_shared_copy(st, st->lim->shared, p, b, f, pv, bytes, &rc)
                        : s_borrow(st->whole, b, f);
    if (rc == GX_ELIMIT)
        return rc; /* a new shared copy would not fit the graph's budget */
    const bool borrowed = !shared && data != NULL;
    if (!data && !shared && (rc = gxd_plan_room(st, "prepare", bytes)) < 0)
        return rc; /* the plan's own copy would not fit its budget */
    if (!name || (!data && (shared || !(data = gxd_plan_own(p, bytes)))))
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
    snprintf(name, len, "%s@%s", b->name, tag);
    if (!borrowed && !shared)
        s_form_fill(f, &b->view, pv, data);
    gxd_value *c = &p->values[p->n_values];
    *c = *b;
    c->name = name;
    c->kind = GXD_VALUE_CONST;
    c->keyed = false;
    c->view = pv;
    c->view.data = data;
    c->nbytes = bytes;
    c->def = -1;
    c->buffer = -1;
    c->offset = 0;
    gxd_prepared *r = &p->prepared[p->n_prepared++];
    *r = (gxd_prepared){.node = s->node ? s->node->name : NULL, .op = f->op,
                        .trans_b = f->trans_b, .layout = f->layout, .from = b->name,
                        .value = (int)p->n_values, .source = s->in[at], .bytes = bytes,
                        .borrowed = borrowed, .shared = shared};
    snprintf(r->what, sizeof r->what, "%s%s", what,
             shared     ? ", the graph's copy, shared by its plans"
             : borrowed ? ", the whole batch's copy"
                        : "");
    p->prepared_bytes += borrowed || shared ? 0 : bytes; /* what the plan alone holds */
    s->in[at] = (int)p->n_values++;
    return GX_OK;
}

/* The implementation step s of the whole batch's plan runs (a slice's
 * plan runs the same, so both give the same bits), or NULL. */
static const gxd_impl_choice *s_whole_choice(const gxd_plan *whole, const gxd_step *s)
{
    for (size_t i = 0; whole && s->node && i < whole->n_impls; i++)
        if (whole->impls[i].node && !strcmp(whole->impls[i].node, s->node->name) &&
            whole->impls[i].op == s->op)
            return &whole->impls[i];
    return NULL;
}

/* The registry's signature of product step s (gxd_tune_sig_of); false
 * when it does not tune it. */
static bool s_step_sig(const gxd_plan *p, const gxd_step *s, gxd_tune_sig *sig)
{
    gx_view in[3];
    for (int k = 0; k < 3; k++)
        in[k] = k < s->n_in && s->in[k] >= 0 ? p->values[s->in[k]].view : (gx_view){.ndim = -1};
    char why[128];
    return gxd_tune_sig_of(s->op, s->attr, s->n_in < 3 ? s->n_in : 3, in,
                           &p->values[s->out[0]].view, sig, why, sizeof why);
}

/* The winner rec names for a step of op with signature sig, when this
 * daemon has it and it runs sig's shapes; NULL: the default runs. */
static const gxd_tune_impl *s_tuned(gxd_tune *t, gx_op op, const gxd_tune_rec *rec,
                                    const gxd_tune_sig *sig)
{
    const gxd_tune_impl *im = gxd_tune_impl_find(t, rec->impl, rec->version);
    return im && gxd_tune_impl_kernel(im, op) && gxd_tune_impl_takes(im, sig) ? im : NULL;
}

/* Seed 003: the implementation of each packable product step todo[j]: a
 * slice's plan takes the whole batch's; else one batch of lookups in the
 * tune registry (lim->tune), whose hits name the winner; a miss (queued
 * for exploration by the registry) or no registry: the default, the
 * packed kernel on the ISA in use (impl[j] NULL without a registry).
 * Fills p->impls, one per todo step, for explain and the re-planner. */
static int s_choose(gxd_cstate *st, const int *todo, size_t n, const gxd_tune_impl **impl)
{
    gxd_plan *p = st->plan;
    gxd_tune *t = st->lim->tune;
    gxd_tune_sig *sigs = gxd_plan_own(p, (n + 1) * sizeof *sigs);
    gxd_tune_rec *recs = calloc(n + 1, sizeof *recs);
    bool *ok = calloc(n + 1, sizeof *ok), *found = calloc(n + 1, sizeof *found);
    int *ask = calloc(n + 1, sizeof *ask);
    gxd_tune_sig *batch = calloc(n + 1, sizeof *batch);
    gxd_tune_rec *brec = calloc(n + 1, sizeof *brec);
    bool *bfound = calloc(n + 1, sizeof *bfound);
    double *weight = calloc(n + 1, sizeof *weight);
    p->impls = gxd_plan_own(p, (n + 1) * sizeof *p->impls);
    int rc = GX_OK;
    if (!sigs || !recs || !ok || !found || !ask || !batch || !brec || !bfound || !weight ||
        !p->impls) {
        rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
        goto out;
    }
    p->tune = t;
    size_t n_ask = 0;
    for (size_t j = 0; j < n; j++) {
        const gxd_step *s = &p->steps[todo[j]];
        ok[j] = s_step_sig(p, s, &sigs[j]);
        if (ok[j] && t && !st->whole) {
            /* its worth for exploration: the time it took in the profile */
            const gxd_profile_node *pn =
                st->lim->profile && s->node ? gxd_profile_find(st->lim->profile, s->node->name)
                                            : NULL;
            weight[n_ask] = pn && pn->ns > 0 ? (double)pn->runs * (double)pn->ns : 0.0;
            batch[n_ask] = sigs[j];
            ask[n_ask++] = (int)j;
        }
    }
    gxd_tune_lookup_batch_prio(t, batch, weight, n_ask, brec, bfound);
    for (size_t q = 0; q < n_ask; q++) {
        recs[ask[q]] = brec[q];
        found[ask[q]] = bfound[q];
    }
    for (size_t j = 0; j < n; j++) {
        const gxd_step *s = &p->steps[todo[j]];
        gxd_impl_choice *c = &p->impls[j];
        *c = (gxd_impl_choice){.node = s->node ? s->node->name : NULL,
                               .op = s->op,
                               .ns = -1,
                               .sig = ok[j] ? &sigs[j] : NULL};
        impl[j] = NULL;
        const gxd_impl_choice *w = st->whole ? s_whole_choice(st->whole, s) : NULL;
        if (w && t && (impl[j] = gxd_tune_impl_find(t, w->impl, w->version)) &&
            gxd_tune_impl_kernel(impl[j], s->op) &&
            (!ok[j] || gxd_tune_impl_scratch(impl[j], &sigs[j]) >= 0)) {
            snprintf(c->source, sizeof c->source, "whole batch");
        } else if (found[j] && (impl[j] = s_tuned(t, s->op, &recs[j], &sigs[j]))) {
            snprintf(c->source, sizeof c->source, "tuned (%s)",
                     recs[j].level == GXD_TUNE_MEMORY  ? "memory"
                     : recs[j].level == GXD_TUNE_LOCAL ? "local"
                                                       : "central");
            c->ns = recs[j].ns;
        } else {
            impl[j] = t ? gxd_tune_default(t, s->op) : NULL;
            snprintf(c->source, sizeof c->source, "default");
        }
        if (impl[j]) {
            snprintf(c->impl, sizeof c->impl, "%s", impl[j]->name);
            c->version = impl[j]->version;
        } else {
            snprintf(c->impl, sizeof c->impl, "%s",
                     s->op == GX_OP_CONV ? "conv.plain" : p->devices[s->device]->gemm_pack->impl());
            c->version = 1;
        }
    }
    p->n_impls = n;
out:
    free(recs);
    free(ok);
    free(found);
    free(ask);
    free(batch);
    free(brec);
    free(bfound);
    free(weight);
    return rc;
}

bool gxd_prepare_choices_current(gxd_plan *p, gxd_tune *t, char *why, size_t len)
{
    const size_t n = p->n_impls;
    gxd_tune_sig *sigs = gxd_plan_own(p, (n + 1) * sizeof *sigs);
    gxd_tune_sig *batch = calloc(n + 1, sizeof *batch);
    gxd_tune_rec *recs = calloc(n + 1, sizeof *recs);
    bool *found = calloc(n + 1, sizeof *found);
    double *weight = calloc(n + 1, sizeof *weight);
    size_t *ask = calloc(n + 1, sizeof *ask), n_ask = 0;
    bool current = sigs && batch && recs && found && weight && ask;
    if (!current)
        snprintf(why, len, "out of memory");
    for (size_t j = 0; current && j < n; j++) {
        gxd_impl_choice *c = &p->impls[j];
        const gxd_step *s = NULL;
        for (size_t i = 0; c->node && !s && i < p->n_steps; i++)
            if (p->steps[i].node && p->steps[i].op == c->op &&
                !strcmp(p->steps[i].node->name, c->node))
                s = &p->steps[i];
        if (!s || !strcmp(c->source, "whole batch")) /* a slice follows its whole plan */
            continue;
        if (s_step_sig(p, s, &sigs[j])) {
            c->sig = &sigs[j];
            batch[n_ask] = sigs[j];
            ask[n_ask++] = j;
        }
    }
    if (current) /* the prepare pass's lookups: misses are queued for exploration */
        gxd_tune_lookup_batch_prio(t, batch, weight, n_ask, recs, found);
    for (size_t q = 0; current && q < n_ask; q++) {
        const gxd_impl_choice *c = &p->impls[ask[q]];
        const gxd_tune_impl *im = found[q] ? s_tuned(t, c->op, &recs[q], c->sig) : NULL;
        if (!im)
            im = gxd_tune_default(t, c->op);
        if (im && (strcmp(im->name, c->impl) || im->version != c->version)) {
            snprintf(why, len, "'%s' (%s) runs %s@%d, the tune registry now names %s@%d", c->node,
                     gx_op_name(c->op), c->impl, c->version, im->name, im->version);
            current = false;
        }
    }
    free(batch);
    free(recs);
    free(found);
    free(weight);
    free(ask);
    return current;
}

/* Is product step s packable (ops/gemm.h)? why when not. */
static bool s_packable(const gxd_plan *p, const gxd_step *s, char *why, size_t len)
{
    const gxd_value *b = &p->values[s->in[1]];
    return p->devices[s->device]->gemm_pack->packable(s->op, s->attr, &p->values[s->in[0]].view, &b->view,
                                &p->values[s->out[0]].view, b->kind == GXD_VALUE_CONST, why, len);
}

int gxd_pass_prepare(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    size_t n_new = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n_new += s_product_step(p, &p->steps[i]) || s_layout_conv(p, &p->steps[i]) ||
                 s_qproduct_step(p, &p->steps[i]) || s_tuned_conv(p, &p->steps[i]) ||
                 s_layout_qconv(p, &p->steps[i]);
    if (!n_new)
        return s_free_dead(p) < 0 ? gx_errf(st->err, st->errlen, GX_ENOMEM,
                                            "prepare: out of memory")
                                  : GX_OK;
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
    int *todo = calloc(n_new + 1, sizeof *todo);
    const gxd_tune_impl **impl = calloc(n_new + 1, sizeof *impl);
    int rc = GX_OK;
    if (!vals || !rec || !refs || !todo || !impl) {
        rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
        goto out;
    }
    size_t n_todo = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        char why[96];
        if ((s_product_step(p, &p->steps[i]) && s_packable(p, &p->steps[i], why, sizeof why)) ||
            s_tuned_conv(p, &p->steps[i]))
            todo[n_todo++] = (int)i;
    }
    if ((rc = s_choose(st, todo, n_todo, impl)) < 0)
        goto out;
    for (size_t i = 0, j = 0; i < p->n_steps && rc >= 0; i++) {
        gxd_step *s = &p->steps[i];
        char what[96];
        if (s_layout_conv(p, s)) {
            const s_form f = {p->devices[s->device], GX_OP_CONV, false, s->layout, s->attr};
            snprintf(what, sizeof what, "W in %s blocks of 16 output channels for the %s Conv "
                                        "kernel",
                     gx_layout_name(s->layout), gx_layout_name(s->layout));
            rc = s_prepare_input(st, s, 1, &f, gx_layout_name(s->layout), what);
        } else if (s_layout_qconv(p, s)) {
            const s_form f = {p->devices[s->device], GX_OP_QLINEAR_CONV, false, s->layout,
                              s->attr};
            snprintf(what, sizeof what, "W as int8 in %d-column panels for the %s QLinearConv "
                                        "kernel",
                     GX_GEMM_PANEL, gx_layout_name(s->layout));
            rc = s_prepare_input(st, s, 3, &f, gx_layout_name(s->layout), what);
        } else if (s_qproduct_step(p, s)) {
            const gx_backend_qgemm_pack *q = p->devices[s->device]->qgemm_pack;
            const s_form f = {p->devices[s->device], s->op, false, GX_LAYOUT_PLAIN, s->attr};
            snprintf(what, sizeof what,
                     "%s as int8 in %d-column panels for the packed %s kernel (%.20s)",
                     s->op == GX_OP_MATMUL_INTEGER || s->op == GX_OP_QLINEAR_MATMUL ? "B" : "W", GX_GEMM_PANEL, gx_op_name(s->op),
                     q->impl());
            if ((rc = s_prepare_input(st, s, q->b_input(s->op), &f, "packed", what)) == GX_OK)
                s->kernel = q->kernel(s->op);
        } else if (j < n_todo && todo[j] == (int)i && s->op == GX_OP_CONV) {
            /* the candidate's kernel and the scratch it declares (s_choose
             * checked it takes the shapes); gexec's own: as compiled */
            const gxd_tune_impl *im = impl[j++];
            const gxd_tune_sig *sig = p->impls[j - 1].sig;
            if (im && sig && im->conv != p->devices[s->device]->kernel(GX_OP_CONV)) {
                s->kernel = im->conv;
                s->scratch_bytes = (size_t)gxd_tune_impl_scratch(im, sig);
            }
        } else if (j < n_todo && todo[j] == (int)i) {
            const gxd_tune_impl *im = impl[j++];
            if (im && !im->packed) { /* reads B as it is: nothing to prepare */
                s->kernel = s->op == GX_OP_GEMM ? im->gemm : im->matmul;
                continue;
            }
            const s_form f = {p->devices[s->device], s->op, s_trans_b(s->op, s->attr),
                              GX_LAYOUT_PLAIN, s->attr};
            snprintf(what, sizeof what, "B in %d-column panels for the packed %s kernel (%.16s)",
                     GX_GEMM_PANEL, gx_op_name(s->op), p->impls[j - 1].impl);
            if ((rc = s_prepare_input(st, s, 1, &f, "packed", what)) == GX_OK)
                s->kernel = im ? (s->op == GX_OP_GEMM ? im->gemm : im->matmul)
                               : p->devices[s->device]->gemm_pack->kernel(s->op);
        }
    }
    if (rc >= 0 && s_free_dead(p) < 0)
        rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
out:
    free(todo);
    free(impl);
    return rc < 0 ? rc : GX_OK;
}
