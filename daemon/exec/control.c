/*
 * Control flow: If runs one of its branches, Loop runs its body until the
 * trip count or the condition says stop, Scan runs its body once per slice
 * of its scan inputs. Each subgraph runs as a plan of its
 * own (compiled on first use for its input signature and cached on the
 * step), over an arena of its own; its outputs are copied to the heap
 * buffers of the step's outputs.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "ops/schema.h"

int gxd_exec_subgraph(gxd_frame *f, const gxd_step *s, const char *attr, const gx_view *formal,
                      size_t n_formal, gx_view *outs)
{
    const int *pos;
    size_t n_cap;
    const gx_graph *g = gxd_subplans_graph(s->sub, attr, &pos, &n_cap);
    if (!g)
        return gx_errf(f->err, f->errlen, GX_EINTERNAL, "node '%s': no subgraph '%s'",
                       s->node->name, attr);
    gx_view *in = calloc(n_formal + n_cap + 1, sizeof *in);
    bool *konst = calloc(n_cap + 1, sizeof *konst);
    if (!in || !konst) {
        free(in), free(konst);
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
    }
    gxd_subplans_consts(f->plan, s, pos, n_cap, konst);
    if (n_formal)
        memcpy(in, formal, n_formal * sizeof *in);
    for (size_t i = 0; i < n_cap; i++)
        in[n_formal + i] = f->val[s->in[pos[i]]];

    char why[768];
    gxd_plan *plan = NULL;
    bool owned = false;
    void *arena = NULL;
    gxd_frame sub = {0};
    size_t n_done = 0;
    int rc = gxd_subplans_get(s->sub, g, in, konst, f->lim, &plan, &owned, why, sizeof why);
    if (rc < 0) {
        rc = gx_errf(f->err, f->errlen, rc, "node '%s' (%s), subgraph '%s': %s", s->node->name,
                     s->node->op, attr, why);
        goto out;
    }
    if (!(arena = gx_aligned_alloc(plan->arena_bytes ? plan->arena_bytes : 1))) {
        rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory for an arena of %zu bytes",
                     plan->arena_bytes);
        goto out;
    }
    if ((rc = gxd_frame_init(&sub, plan, arena, in, f->lim, f->stop, why, sizeof why)) == GX_OK) {
        gxd_frame_borrow_strs(&sub, f); /* its strings may be among its outputs */
        rc = gxd_exec_seq(&sub);
        f->device_ns += sub.device_ns;
    }
    if (rc < 0) {
        if (rc != GX_ECANCELLED && rc != GX_ETIMEDOUT)
            rc = gx_errf(f->err, f->errlen, rc, "node '%s' (%s), subgraph '%s': %s",
                         s->node->name, s->node->op, attr, why);
        goto out;
    }
    for (; n_done < plan->n_outputs; n_done++)
        if ((rc = gxd_view_clone(f, gxd_frame_output(&sub, n_done), &outs[n_done])) < 0)
            break;
out:
    if (rc < 0)
        for (size_t i = 0; i < n_done; i++)
            gxd_view_free(&outs[i]);
    gxd_frame_fini(&sub);
    free(arena);
    if (owned)
        gxd_plan_destroy(&plan);
    free(in);
    free(konst);
    return rc;
}

/* Makes v (a heap copy) the value of step output k. */
static void s_set_output(gxd_frame *f, const gxd_step *s, int k, gx_view v)
{
    gxd_frame_set(f, s->out[k], v);
}

static bool s_true(const gx_view *v)
{
    return ((const uint8_t *)v->data)[0] != 0;
}

static int s_if(gxd_frame *f, const gxd_step *s)
{
    const gx_view *cond = &f->val[s->in[0]];
    gx_view outs[GX_MAX_OP_INPUTS];
    int rc = gxd_exec_subgraph(f, s, s_true(cond) ? "then_branch" : "else_branch", NULL, 0, outs);
    if (rc < 0)
        return rc;
    for (int k = 0; k < s->n_out; k++)
        s_set_output(f, s, k, outs[k]);
    return GX_OK;
}

/* Scan output accumulator (Loop, Scan): the body's per-iteration values,
 * stacked along a new first axis. */
typedef struct s_stack {
    gx_view elem; /* shape and dtype of one iteration's value */
    char *data;
    size_t n, cap; /* bytes */
} s_stack;

static int s_stack_add(gxd_frame *f, const gxd_step *s, s_stack *sc, const gx_view *v,
                      int64_t iter)
{
    size_t nbytes = (size_t)v->numel * gx_dtype_size(v->dtype);
    if (v->kind != GX_KIND_TENSOR)
        return gx_errf(f->err, f->errlen, GX_EUNSUPPORTED,
                       "node '%s' (%s): a scan output must be a tensor, not a sequence or optional",
                       s->node->name, s->node->op);
    if (iter == 0) {
        sc->elem = *v;
    } else if (v->dtype != sc->elem.dtype || v->ndim != sc->elem.ndim ||
               memcmp(v->shape, sc->elem.shape, (size_t)v->ndim * sizeof *v->shape)) {
        return gx_errf(f->err, f->errlen, GX_ESHAPE,
                       "node '%s' (%s): a scan output changes shape or dtype in iteration %lld",
                       s->node->name, s->node->op, (long long)iter);
    }
    if (v->ndim + 1 > GX_MAX_DIMS)
        return gx_errf(f->err, f->errlen, GX_ELIMIT,
                       "node '%s' (%s): scan output would have more than %d dims",
                       s->node->name, s->node->op, GX_MAX_DIMS);
    if (sc->n + nbytes > (uint64_t)f->lim->max_tensor_bytes)
        return gx_errf(f->err, f->errlen, GX_ELIMIT,
                       "node '%s' (%s): a scan output grew past the tensor limit of %lld bytes",
                       s->node->name, s->node->op, (long long)f->lim->max_tensor_bytes);
    if (!gx_grow(&sc->data, &sc->cap, sc->n + nbytes, 1))
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
    if (nbytes)
        memcpy(sc->data + sc->n, v->data, nbytes);
    sc->n += nbytes;
    return GX_OK;
}

/* The stacked scan output [iterations, elem...]. With no iteration, the
 * body's declared output type gives dtype and inner shape where it can. */
static int s_stack_finish(gxd_frame *f, s_stack *sc, int64_t iters, const gx_value_decl *decl,
                         gx_view *out)
{
    memset(out, 0, sizeof *out);
    if (iters == 0) {
        sc->elem.dtype = decl->dtype < GX_DTYPE_COUNT ? decl->dtype : GX_F32;
        sc->elem.ndim = decl->ndim > 0 && decl->ndim < GX_MAX_DIMS ? decl->ndim : 0;
        for (int d = 0; d < sc->elem.ndim; d++)
            sc->elem.shape[d] = decl->shape[d] > 0 ? decl->shape[d] : 0;
    }
    out->dtype = sc->elem.dtype;
    out->ndim = sc->elem.ndim + 1;
    out->shape[0] = iters;
    memcpy(out->shape + 1, sc->elem.shape, (size_t)sc->elem.ndim * sizeof *out->shape);
    out->numel = gx_shape_numel(out->ndim, out->shape, INT64_MAX);
    out->data = gx_aligned_alloc(sc->n ? sc->n : 1);
    if (!out->data)
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
    if (sc->n)
        memcpy(out->data, sc->data, sc->n);
    return GX_OK;
}

/* What Loop and Scan carry from one body run to the next: the state (at
 * first the step's own inputs, borrowed; heap copies once a run has
 * produced them) and the stacked scan outputs. */
typedef struct s_carry {
    gx_view *state; /* n_state views, inside the body's formal inputs */
    int n_state;
    bool owned; /* state data is ours to free */
    s_stack *stacks;
    int n_stack;
} s_carry;

/* After body run `iter`: outs[0..n_state) become the state, the rest are
 * stacked. Takes or frees the data of every out. */
static int s_carry_step(gxd_frame *f, const gxd_step *s, s_carry *c, gx_view *outs, int64_t iter)
{
    int rc = GX_OK;
    for (int j = 0; j < c->n_state; j++) {
        if (c->owned)
            gxd_view_free(&c->state[j]);
        c->state[j] = outs[j];
    }
    c->owned = true;
    for (int k = 0; k < c->n_stack && rc == GX_OK; k++)
        rc = s_stack_add(f, s, &c->stacks[k], &outs[c->n_state + k], iter);
    for (int k = 0; k < c->n_stack; k++)
        gxd_view_free(&outs[c->n_state + k]);
    return rc;
}

/* The step's outputs: the final state, then the stacks of `iters` runs
 * (decls: the body's outputs they come from, for the empty case). */
static int s_carry_finish(gxd_frame *f, const gxd_step *s, s_carry *c, int64_t iters,
                          const gx_value_decl *decls)
{
    int rc;
    for (int j = 0; j < c->n_state; j++) {
        gx_view v = c->state[j];
        if (!c->owned && (rc = gxd_view_clone(f, &c->state[j], &v)) < 0)
            return rc;
        s_set_output(f, s, j, v);
        c->state[j].data = NULL; /* the output owns it now */
    }
    for (int k = 0; k < c->n_stack; k++) {
        gx_view v;
        if ((rc = s_stack_finish(f, &c->stacks[k], iters, &decls[k], &v)) < 0)
            return rc;
        s_set_output(f, s, c->n_state + k, v);
    }
    return GX_OK;
}

static void s_carry_fini(s_carry *c)
{
    for (int j = 0; c->owned && j < c->n_state; j++)
        gxd_view_free(&c->state[j]);
    for (int k = 0; c->stacks && k < c->n_stack; k++)
        free(c->stacks[k].data);
    free(c->stacks);
}

static int s_loop(gxd_frame *f, const gxd_step *s)
{
    const gx_graph *body = s->attr[GX_LOOP_BODY].g;
    int n_carried = s->n_formal - 2, n_scan = s->n_out - n_carried, rc = GX_OK;
    int64_t max_iter = s->in[0] >= 0 ? *(const int64_t *)f->val[s->in[0]].data : INT64_MAX;
    uint8_t cond = s->in[1] >= 0 ? s_true(&f->val[s->in[1]]) : 1;
    int64_t iter = 0;
    /* formal: iteration number, cond, then the carried values */
    gx_view *formal = calloc((size_t)n_carried + 2, sizeof *formal);
    gx_view *outs = calloc((size_t)s->n_out + 2, sizeof *outs);
    s_carry c = {formal ? formal + 2 : NULL, n_carried, false,
                 calloc((size_t)n_scan + 1, sizeof *c.stacks), n_scan};
    if (!formal || !outs || !c.stacks) {
        rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    formal[0] = (gx_view){.dtype = GX_I64, .ndim = 0, .numel = 1, .data = &iter};
    formal[1] = (gx_view){.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &cond};
    for (int j = 0; j < n_carried; j++)
        formal[2 + j] = f->val[s->in[2 + j]];
    for (; iter < max_iter && cond; iter++) {
        if ((rc = gxd_exec_should_stop(f->stop)) < 0 ||
            (rc = gxd_exec_subgraph(f, s, "body", formal, (size_t)n_carried + 2, outs)) < 0)
            goto out;
        const gx_view *co = &outs[0];
        bool ok = co->kind == GX_KIND_TENSOR && co->dtype == GX_BOOL && co->numel == 1;
        cond = ok && s_true(co);
        gxd_view_free(&outs[0]);
        if ((rc = s_carry_step(f, s, &c, outs + 1, iter)) < 0)
            goto out;
        if (!ok) {
            rc = gx_errf(f->err, f->errlen, GX_EDTYPE,
                         "node '%s' (Loop): the body's cond output must be one bool",
                         s->node->name);
            goto out;
        }
    }
    rc = s_carry_finish(f, s, &c, iter, &body->outputs[1 + n_carried]);
out:
    s_carry_fini(&c);
    free(outs);
    free(formal);
    return rc;
}

static int s_scan(gxd_frame *f, const gxd_step *s)
{
    const gx_graph *body = s->attr[GX_SCAN_BODY].g;
    int n_scan_in = (int)s->attr[GX_SCAN_NUM_SCAN_INPUTS].i;
    int n_state = s->n_formal - n_scan_in, n_scan_out = s->n_out - n_state, rc = GX_OK;
    int64_t iters = f->val[s->in[n_state]].shape[0], iter = 0;
    /* formal: the state, then one slice of each scan input, pointing into it */
    gx_view *formal = calloc((size_t)s->n_formal + 1, sizeof *formal);
    gx_view *outs = calloc((size_t)s->n_out + 1, sizeof *outs);
    s_carry c = {formal, n_state, false, calloc((size_t)n_scan_out + 1, sizeof *c.stacks),
                 n_scan_out};
    if (!formal || !outs || !c.stacks) {
        rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    for (int j = 0; j < n_state; j++)
        formal[j] = f->val[s->in[j]];
    for (; iter < iters; iter++) {
        for (int j = n_state; j < s->n_formal; j++) {
            const gx_view *x = &f->val[s->in[j]];
            gx_view *slice = &formal[j];
            *slice = *x;
            slice->ndim = x->ndim - 1;
            memmove(slice->shape, x->shape + 1, (size_t)slice->ndim * sizeof *slice->shape);
            slice->numel = x->shape[0] ? x->numel / x->shape[0] : 0;
            slice->data = (char *)x->data + iter * slice->numel * (int64_t)gx_dtype_size(x->dtype);
        }
        if ((rc = gxd_exec_should_stop(f->stop)) < 0 ||
            (rc = gxd_exec_subgraph(f, s, "body", formal, (size_t)s->n_formal, outs)) < 0 ||
            (rc = s_carry_step(f, s, &c, outs, iter)) < 0)
            goto out;
    }
    rc = s_carry_finish(f, s, &c, iter, &body->outputs[n_state]);
out:
    s_carry_fini(&c);
    free(outs);
    free(formal);
    return rc;
}

int gxd_exec_control(gxd_frame *f, const gxd_step *s)
{
    /* If's cond, Loop's M and cond, Scan's scanned inputs are tensors;
     * other inputs (Loop's carried values) may be sequences or none */
    int n_tensors = s->op == GX_OP_IF     ? 1
                    : s->op == GX_OP_LOOP ? 2
                    : s->op == GX_OP_SCAN ? s->n_formal
                                          : 0;
    for (int k = 0; k < n_tensors && k < s->n_formal; k++)
        if (s->in[k] >= 0 && f->val[s->in[k]].kind != GX_KIND_TENSOR)
            return gx_errf(f->err, f->errlen, GX_EDTYPE, "node '%s' (%s): input %d must be a tensor",
                           s->node->name, s->node->op, k);
    if (s->op == GX_OP_IF)
        return s_if(f, s);
    if (s->op == GX_OP_LOOP)
        return s_loop(f, s);
    if (s->op == GX_OP_SCAN)
        return s_scan(f, s);
    return gxd_exec_values(f, s);
}
