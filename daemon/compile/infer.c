/*
 * Pass 2, infer. Contract: on GX_OK every value has a dtype, a concrete
 * shape, numel and nbytes within the tensor limit; graph inputs match their
 * declarations; every step has its cost estimate; declared graph outputs
 * match what was inferred. Constants' views point at their data so schemas
 * can read shape-like inputs (Reshape).
 */
#include <stdio.h>
#include <string.h>

#include "daemon/compile/passes.h"

static bool s_matches(const gx_value_decl *d, const gx_view *v)
{
    if (d->dtype != v->dtype || d->ndim != v->ndim)
        return false;
    for (int i = 0; i < d->ndim; i++)
        if (d->shape[i] != -1 && d->shape[i] != v->shape[i])
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

int gxd_pass_infer(gxd_cstate *st)
{
    const gx_graph *g = st->g;
    gxd_plan *p = st->plan;
    char sh1[160], sh2[160];
    int rc;

    for (size_t i = 0; i < g->n_inputs; i++) {
        const gx_value_decl *d = &g->inputs[i];
        gxd_value *v = &p->values[p->inputs[i]];
        v->view = st->inputs[i];
        v->view.data = NULL;
        if (!s_matches(d, &v->view))
            return gx_errf(st->err, st->errlen, GX_ESHAPE, "input '%s': expected %s %s, got %s %s",
                           d->name, gx_dtype_name(d->dtype),
                           gx_shape_str(d->ndim, d->shape, sh1, sizeof sh1),
                           gx_dtype_name(v->view.dtype) ? gx_dtype_name(v->view.dtype) : "?",
                           gx_shape_str(v->view.ndim, v->view.shape, sh2, sizeof sh2));
        if ((rc = s_set_size(st, v)) < 0)
            return rc;
    }
    for (size_t i = 0; i < g->n_consts; i++) {
        gxd_value *v = &p->values[g->n_inputs + i];
        const gx_tensor *t = g->consts[i].t;
        v->view.dtype = t->dtype;
        v->view.ndim = t->ndim;
        memcpy(v->view.shape, t->shape, sizeof t->shape);
        v->view.numel = t->numel;
        v->view.data = t->data;
        v->nbytes = t->nbytes;
    }

    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if (s->n_in > GX_MAX_OP_INPUTS || s->n_out > GX_MAX_OP_INPUTS)
            return gx_errf(st->err, st->errlen, GX_ELIMIT, "node '%s': more than %d inputs or outputs",
                           s->node->name, GX_MAX_OP_INPUTS);
        for (int k = 0; k < s->n_in; k++) {
            if (s->in[k] < 0) {
                memset(&in[k], 0, sizeof in[k]);
                in[k].ndim = -1;
            } else {
                in[k] = p->values[s->in[k]].view;
            }
        }
        memset(out, 0, sizeof out[0] * (size_t)s->n_out);
        char msg[384] = "";
        gx_infer ic = {s->attr, s->n_in, in, s->n_out, out, msg, sizeof msg};
        rc = gx_op_schema_get(s->op)->infer(&ic);
        if (rc < 0)
            return gx_errf(st->err, st->errlen, rc, "node '%s' (%s): %s", s->node->name,
                           s->node->op, msg[0] ? msg : gx_strerror(rc));
        for (int k = 0; k < s->n_out; k++) {
            gxd_value *v = &p->values[s->out[k]];
            v->view = out[k];
            v->view.data = NULL;
            if ((rc = s_set_size(st, v)) < 0)
                return rc;
            out[k].numel = v->view.numel;
        }
        s->cost = gx_op_schema_get(s->op)->cost(&ic);
        p->flops += s->cost.flops;
    }

    for (size_t i = 0; i < g->n_outputs; i++) {
        const gx_value_decl *d = &g->outputs[i];
        const gxd_value *v = &p->values[p->outputs[i]];
        if (d->ndim >= 0 && !s_matches(d, &v->view))
            return gx_errf(st->err, st->errlen, GX_ESHAPE,
                           "graph output '%s' is declared %s %s but computes to %s %s", d->name,
                           gx_dtype_name(d->dtype), gx_shape_str(d->ndim, d->shape, sh1, sizeof sh1),
                           gx_dtype_name(v->view.dtype),
                           gx_shape_str(v->view.ndim, v->view.shape, sh2, sizeof sh2));
    }
    return GX_OK;
}
