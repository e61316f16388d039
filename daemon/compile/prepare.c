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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/gemm.h"
#include "ops/schema.h"

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
    if (vals)
        p->values = vals;
    if (rec)
        p->prepared = rec;
    if (!vals || !rec)
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
        float *packed = s_borrow(st->whole, b, s->op, s->attr);
        const bool borrowed = packed != NULL;
        if (!name || (!packed && !(packed = gxd_plan_own(p, bytes))))
            return gx_errf(st->err, st->errlen, GX_ENOMEM, "prepare: out of memory");
        snprintf(name, len, "%s@packed", b->name);
        if (!borrowed)
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
                                                      .borrowed = borrowed};
        snprintf(p->prepared[p->n_prepared - 1].what, sizeof p->prepared[0].what,
                 "B in %d-column panels for the packed %s kernel (%s)%s", GX_GEMM_PANEL,
                 gx_op_name(s->op), gx_cpu_gemm_isa(),
                 borrowed ? ", the whole batch's copy" : "");
        p->prepared_bytes += borrowed ? 0 : bytes;
        s->in[1] = (int)p->n_values++;
        s->kernel = gx_cpu_gemm_packed_kernel(s->op);
    }
    return GX_OK;
}
