/*
 * Pass 2, infer. Contract: on GX_OK every value is either dynamic (its step
 * runs infer again at run time) or has a dtype, a concrete shape, numel and
 * nbytes within the tensor limit; graph inputs match their declarations;
 * every static step has its cost estimate; declared graph outputs match what
 * was inferred. Views of constants, keyed inputs (a copy the plan owns) and
 * folded values point at their data, so schemas can read shape-like inputs.
 * A step whose inputs are all known and whose outputs are small is folded:
 * run here, its outputs become constants, it never runs per job. Nodes
 * refused as unsupported (op variant, dtype) do not stop the pass: one error
 * names every one of them. A node refused for its float16 (bfloat16)
 * inputs that infers with them as float32 is not refused but marked wide:
 * its half outputs keep the half dtype (the graph's), the widen pass
 * (widen.c) gives it float32 twins; folded, it runs here on converted
 * copies of its inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/layout.h"

/* Largest output a folded step may produce (per output). */
#define GXD_MAX_FOLD_BYTES (1 << 20)

/* Does v fit declaration d? any_dim0: axis 0 may have any size (a slice
 * of the batch, gxd_compile_slice). */
static bool s_matches(const gx_value_decl *d, const gx_view *v, bool any_dim0)
{
    if (d->ndim < 0) /* unknown rank (a subgraph input may lack its dtype too) */
        return d->dtype == GX_DTYPE_COUNT || d->dtype == v->dtype;
    if ((d->dtype != GX_DTYPE_COUNT && d->dtype != v->dtype) || d->ndim != v->ndim)
        return false;
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] != -1 && d->shape[i] != v->shape[i] && !(i == 0 && any_dim0))
            return false;
    return true;
}

static int s_set_size(gxd_cstate *st, gxd_value *v)
{
    size_t es = gx_dtype_size(v->view.dtype);
    int64_t n = es ? gx_shape_numel(v->view.ndim, v->view.shape, st->lim->max_tensor_bytes / (int64_t)es)
                   : -1;
    if (n < 0) {
        char sh[160];
        return gx_errf(st->err, st->errlen, GX_ELIMIT,
                       "value '%s' of shape %s %s is larger than the tensor limit of %lld bytes",
                       v->name, gx_shape_str(v->view.ndim, v->view.shape, sh, sizeof sh),
                       gx_dtype_name(v->view.dtype) ? gx_dtype_name(v->view.dtype) : "?",
                       (long long)st->lim->max_tensor_bytes);
    }
    v->view.numel = n;
    v->nbytes = (size_t)n * es;
    return GX_OK;
}


static int s_bind_inputs(gxd_cstate *st)
{
    const gx_graph *g = st->g;
    gxd_plan *p = st->plan;
    char sh1[160], sh2[160];
    int rc;
    for (size_t i = 0; i < p->n_inputs; i++) {
        gxd_value *v = &p->values[p->inputs[i]];
        const void *data = st->inputs[i].data;
        v->view = gx_layout_logical(&st->inputs[i]); /* the layout pass keeps its layout */
        v->view.data = NULL;
        const gx_value_decl *d = i < g->n_inputs ? &g->inputs[i] : NULL;
        const gx_kind kind = st->inputs[i].kind;
        if (d && kind != d->kind && !(kind == GX_KIND_NONE && d->optional))
            return gx_errf(st->err, st->errlen, GX_EDTYPE, "input '%s': expected a %s%s, got a %s",
                           d->name, d->optional ? "optional " : "", gx_kind_name(d->kind),
                           gx_kind_name(kind));
        if (kind != GX_KIND_TENSOR) {
            /* a sequence or none: a dynamic value, read where it is; every
             * step that reads it runs at run time */
            v->kind = GXD_VALUE_DYNAMIC;
            v->keyed = false;
            v->view = (gx_view){.dtype = st->inputs[i].dtype, .kind = kind};
            v->nbytes = 0;
            continue;
        }
        if (d && !s_matches(d, &v->view, st->slice && !v->keyed))
            return gx_errf(st->err, st->errlen, GX_ESHAPE, "input '%s': expected %s %s, got %s %s",
                           d->name, gx_dtype_name(d->dtype) ? gx_dtype_name(d->dtype) : "any",
                           gx_shape_str(d->ndim, d->shape, sh1, sizeof sh1),
                           gx_dtype_name(v->view.dtype) ? gx_dtype_name(v->view.dtype) : "?",
                           gx_shape_str(v->view.ndim, v->view.shape, sh2, sizeof sh2));
        if ((rc = s_set_size(st, v)) < 0)
            return rc;
        if (i >= g->n_inputs && st->captured_const && st->captured_const[i - g->n_inputs] &&
            data && v->view.layout == GX_LAYOUT_PLAIN) {
            /* the enclosing plan's constant: this plan's too, read in place */
            v->kind = GXD_VALUE_CONST;
            v->keyed = false;
            v->view.data = (void *)data;
            continue;
        }
        if (v->view.dtype == GX_STRING) /* handles are addresses (verify.c, s_mark_keyed) */
            v->keyed = false;
        if (!v->keyed)
            continue;
        if (!data) { /* compiled ahead of any job (LOAD): the key is unknown */
            p->needs_keys = true;
            v->keyed = false;
        } else if (v->nbytes > GXD_MAX_KEY_BYTES) {
            v->keyed = false;
        } else {
            if (!(v->view.data = gxd_plan_own(p, v->nbytes)))
                return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
            memcpy(v->view.data, data, v->nbytes);
        }
    }
    for (size_t i = 0; i < g->n_consts; i++) {
        gxd_value *v = &p->values[p->n_inputs + i];
        const gx_tensor *t = g->consts[i].t;
        v->view.dtype = t->dtype;
        v->view.ndim = t->ndim;
        memcpy(v->view.shape, t->shape, sizeof t->shape);
        v->view.numel = t->numel;
        v->view.data = t->data;
        v->nbytes = t->nbytes;
    }
    return GX_OK;
}

/* Runs step s now: its inputs are all known (or it reads only shapes) and
 * its outputs small. The outputs become constants the plan owns. */
static int s_fold(gxd_cstate *st, gxd_step *s, const gx_infer *ic)
{
    gxd_plan *p = st->plan;
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    void *scratch = NULL;
    if (sc->scratch && !(scratch = gx_aligned_alloc(sc->scratch(ic) + 1)))
        return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
    /* a wide step (widen.c) computes a half output in float32 first */
    float *wide[GX_MAX_OP_INPUTS] = {0};
    int rc = GX_OK;
    for (int k = 0; k < s->n_out; k++) {
        gxd_value *v = &p->values[s->out[k]];
        if (!(ic->out[k].data = v->view.data = gxd_plan_own(p, v->nbytes))) {
            rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
        v->kind = GXD_VALUE_CONST;
        if (ic->out[k].dtype != v->view.dtype &&
            !(ic->out[k].data = wide[k] =
                  gx_aligned_alloc((size_t)v->view.numel * sizeof(float) + 1))) {
            rc = gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
    }
    gx_kargs ka = {.attr = s->attr, .n_in = s->n_formal, .in = ic->in, .n_out = s->n_out,
                   .out = ic->out, .scratch = scratch, .nth = 1};
    gx_backend_cpu()->kernel(s->op)(&ka); /* folding runs on the host */
    for (int k = 0; k < s->n_out; k++)
        if (wide[k])
            gxd_widen_from_f32(wide[k], p->values[s->out[k]].view.dtype,
                               p->values[s->out[k]].view.data, ic->out[k].numel);
    s->folded = true;
out:
    for (int k = 0; k < s->n_out; k++)
        free(wide[k]);
    free(scratch);
    return rc;
}

/* Is rc a refusal of what the node asks for (rather than a broken graph)?
 * Those are collected, so that one error lists them all. */
static bool s_unsupported(int rc)
{
    return rc == GX_EUNSUPPORTED || rc == GX_EDTYPE;
}

/* Appends "node 'n' (Op): msg" to the collected refusals. */
static void s_refusal(char *buf, size_t len, size_t *n, const gxd_step *s, const char *msg)
{
    size_t used = strlen(buf);
    if (used + 1 < len)
        snprintf(buf + used, len - used, "%snode '%s' (%s): %s", *n ? "; " : "", s->node->name,
                 s->node->op, msg);
    (*n)++;
}

static void s_make_dynamic(gxd_plan *p, gxd_step *s)
{
    s->dynamic = true;
    p->n_dynamic++;
    for (int k = 0; k < s->n_out; k++) {
        gxd_value *v = &p->values[s->out[k]];
        v->kind = GXD_VALUE_DYNAMIC;
        memset(&v->view, 0, sizeof v->view);
        v->view.ndim = -1;
        v->nbytes = 0;
    }
}

int gxd_pass_infer(gxd_cstate *st)
{
    const gx_graph *g = st->g;
    gxd_plan *p = st->plan;
    char sh1[160], sh2[160];
    int rc;

    if ((rc = s_bind_inputs(st)) < 0)
        return rc;

    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    char refused[1024] = "";
    size_t n_refused = 0;
    int refused_rc = GX_OK;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        const gx_op_schema *sc = gx_op_schema_get(s->op);
        /* values an If/Loop/Scan body captures from outside are inputs
         * beyond the formal ones, passed on through the heap: any number */
        if (s->n_formal > GX_MAX_OP_INPUTS || s->n_out > GX_MAX_OP_INPUTS)
            return gx_errf(st->err, st->errlen, GX_ELIMIT, "node '%s': more than %d inputs or outputs",
                           s->node->name, GX_MAX_OP_INPUTS);
        bool upstream_dynamic = false, known = true;
        for (int k = 0; k < s->n_formal; k++) {
            if (s->in[k] < 0) {
                memset(&in[k], 0, sizeof in[k]);
                in[k].ndim = -1;
                continue;
            }
            const gxd_value *v = &p->values[s->in[k]];
            in[k] = v->view;
            upstream_dynamic = upstream_dynamic || v->kind == GXD_VALUE_DYNAMIC;
            known = known && in[k].data;
        }
        if (upstream_dynamic) {
            s_make_dynamic(p, s);
            continue;
        }
        memset(out, 0, sizeof out[0] * (size_t)s->n_out);
        char msg[384] = "";
        gx_infer ic = {s->attr, s->n_formal, in, s->n_out, out, msg, sizeof msg};
        rc = sc->infer(&ic);
        if (rc == GX_OK)
            rc = gx_op_check_strings(s->op, &ic);
        /* no kernel for its float16 (bfloat16) inputs: as float32 (widen.c) */
        gxd_widen_try wt;
        if (rc == GX_EDTYPE && gxd_widen_views(s, in, known, &wt)) {
            memset(out, 0, sizeof out[0] * (size_t)s->n_out);
            char msg2[384] = "";
            gx_infer ic2 = {s->attr, s->n_formal, in, s->n_out, out, msg2, sizeof msg2};
            int rc2 = sc->infer(&ic2);
            gx_view hout[GX_MAX_OP_INPUTS];
            for (int k = 0; rc2 == GX_OK && k < s->n_out; k++) {
                hout[k] = out[k];
                if (out[k].dtype == GX_F32 && wt.outs_half)
                    hout[k].dtype = wt.half;
            }
            if (rc2 == GX_OK && !known && gxd_widen_device_half(st, s, wt.orig, hout)) {
                /* a device runs it at half: it keeps the graph's dtypes */
                gxd_widen_undo(s, in, &wt);
                memcpy(out, hout, sizeof out[0] * (size_t)s->n_out);
                rc = GX_OK, s->dev_half = true;
            } else if (rc2 == GX_OK) {
                rc = GX_OK, s->wide = true;
            } else {
                gxd_widen_undo(s, in, &wt);
                if (rc2 != GX_EDTYPE && rc2 != GX_INFER_DYNAMIC) /* what is wrong besides */
                    rc = rc2, snprintf(msg, sizeof msg, "%s", msg2);
            }
        }
        if (rc == GX_INFER_DYNAMIC) {
            s_make_dynamic(p, s);
            continue;
        }
        if (s_unsupported(rc)) {
            s_refusal(refused, sizeof refused, &n_refused, s, msg[0] ? msg : gx_strerror(rc));
            refused_rc = refused_rc < 0 ? refused_rc : rc;
            s_make_dynamic(p, s); /* so that the nodes after it are looked at */
            continue;
        }
        if (rc < 0)
            return gx_errf(st->err, st->errlen, rc, "node '%s' (%s): %s", s->node->name,
                           s->node->op, msg[0] ? msg : gx_strerror(rc));
        bool small = true;
        for (int k = 0; k < s->n_out; k++) {
            gxd_value *v = &p->values[s->out[k]];
            v->view = out[k];
            v->view.data = NULL;
            if (s->wide && out[k].dtype == GX_F32 && wt.outs_half)
                v->view.dtype = wt.half; /* the graph's dtype; out[k] stays the kernel's */
            if ((rc = s_set_size(st, v)) < 0) {
                if (s->wide)
                    gxd_widen_done(s, &wt);
                return rc;
            }
            out[k].numel = v->view.numel;
            small = small && v->nbytes <= GXD_MAX_FOLD_BYTES;
        }
        s->cost = sc->cost(&ic);
        s->scratch_bytes = sc->scratch ? sc->scratch(&ic) : 0;
        s->max_shares = sc->shares ? sc->shares(&ic) : 0;
        /* no folding into strings: a plan has no string heap (docs/strings.md) */
        for (int k = 0; k < s->n_out; k++)
            small = small && out[k].dtype != GX_STRING;
        if (small && !(sc->flags & (GX_OPF_NO_FOLD | GX_OPF_CONTROL)) &&
            (known || (sc->flags & GX_OPF_READS_SHAPES))) {
            rc = s_fold(st, s, &ic);
            if (s->wide)
                gxd_widen_done(s, &wt);
            s->wide = false; /* nothing of it runs */
            if (rc < 0)
                return rc;
            continue;
        }
        if (s->wide)
            gxd_widen_done(s, &wt);
        p->flops += s->cost.flops;
    }
    if (n_refused == 1)
        return gx_errf(st->err, st->errlen, refused_rc, "%s", refused);
    if (n_refused)
        return gx_errf(st->err, st->errlen, refused_rc, "%zu unsupported nodes: %s", n_refused,
                       refused);

    for (size_t i = 0; i < g->n_outputs; i++) {
        const gx_value_decl *d = &g->outputs[i];
        const gxd_value *v = &p->values[p->outputs[i]];
        if (d->ndim >= 0 && v->kind != GXD_VALUE_DYNAMIC && !s_matches(d, &v->view, st->slice))
            return gx_errf(st->err, st->errlen, GX_ESHAPE,
                           "graph output '%s' is declared %s %s but computes to %s %s", d->name,
                           gx_dtype_name(d->dtype), gx_shape_str(d->ndim, d->shape, sh1, sizeof sh1),
                           gx_dtype_name(v->view.dtype),
                           gx_shape_str(v->view.ndim, v->view.shape, sh2, sizeof sh2));
    }
    return GX_OK;
}
