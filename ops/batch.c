/* Seed 002's replica split, op by op: gx_op_batch_separable (ops/op.h) and
 * the rules the schemas share (ops/batch.h). A rule that cannot prove an op
 * keeps samples apart says no; the compiler then counts the node as one
 * that mixes samples, which costs speed, never a wrong answer. */
#include "ops/batch.h"
#include "ops/schema.h"

static bool s_has_in(const gx_batch_ctx *bc, int i)
{
    return i < bc->n_in && bc->in[i].ndim >= 0;
}

static bool s_has_out(const gx_batch_ctx *bc, int k)
{
    return k < bc->n_out && bc->out[k].ndim >= 0;
}

bool gx_batch_in(const gx_batch_ctx *bc, int i)
{
    return s_has_in(bc, i) && bc->in_batched[i];
}

bool gx_batch_samplewise(const gx_batch_ctx *bc)
{
    if (!gx_batch_in(bc, 0) || bc->in[0].ndim < 1)
        return false;
    for (int i = 1; i < bc->n_in; i++)
        if (gx_batch_in(bc, i))
            return false;
    const int64_t n = bc->in[0].shape[0];
    for (int k = 0; k < bc->n_out; k++)
        if (s_has_out(bc, k) && (bc->out[k].ndim < 1 || bc->out[k].shape[0] != n))
            return false;
    for (int k = 0; k < bc->n_out; k++)
        bc->out_batched[k] = s_has_out(bc, k);
    return true;
}

bool gx_batch_axis_not0(const gx_batch_ctx *bc, int axis_attr)
{
    int axis;
    if (!gx_batch_samplewise(bc) || !gx_axis_norm(bc->attr[axis_attr].i, bc->in[0].ndim, &axis))
        return false;
    return axis != 0;
}

bool gx_batch_concat(const gx_batch_ctx *bc, int axis_attr)
{
    int axis;
    if (bc->n_in < 1 || !s_has_out(bc, 0) || bc->out[0].ndim < 1 || bc->in[0].ndim < 1 ||
        !gx_axis_norm(bc->attr[axis_attr].i, bc->in[0].ndim, &axis) || axis == 0)
        return false;
    const int64_t n = bc->out[0].shape[0];
    for (int i = 0; i < bc->n_in; i++)
        if (!gx_batch_in(bc, i) || bc->in[i].ndim != bc->in[0].ndim || bc->in[i].shape[0] != n)
            return false;
    bc->out_batched[0] = true;
    return true;
}

bool gx_batch_matmul(const gx_batch_ctx *bc, int ia, int ib, uint32_t per_row)
{
    if (!s_has_in(bc, ia) || !s_has_in(bc, ib) || bc->n_out != 1 || !s_has_out(bc, 0))
        return false;
    const gx_view *a = &bc->in[ia], *b = &bc->in[ib], *y = &bc->out[0];
    const bool ba = gx_batch_in(bc, ia), bb = gx_batch_in(bc, ib);
    const int r = y->ndim;
    if (a->ndim < 1 || b->ndim < 1 || r < 1)
        return false;
    for (int i = 0; i < bc->n_in; i++) {
        if (i == ia || i == ib || !s_has_in(bc, i))
            continue;
        /* a parameter per row of A's rows, when they are the batch */
        if (gx_batch_in(bc, i) ||
            ((per_row >> i & 1) && ba && a->ndim == 2 && gx_view_numel(&bc->in[i]) != 1))
            return false;
    }
    if (ba && !((a->ndim == 2 && b->ndim <= 2 && !bb) || (a->ndim >= 3 && a->ndim == r)))
        return false;
    if (bb && !(b->ndim >= 3 && b->ndim == r))
        return false;
    if ((!ba && r >= 3 && a->ndim == r && a->shape[0] != 1) ||
        (!bb && r >= 3 && b->ndim == r && b->shape[0] != 1))
        return false;
    if ((!ba && !bb) || y->shape[0] != (ba ? a : b)->shape[0])
        return false;
    bc->out_batched[0] = true;
    return true;
}

bool gx_batch_broadcast(const gx_batch_ctx *bc)
{
    if (bc->n_out != 1 || !s_has_out(bc, 0) || bc->out[0].ndim < 1)
        return false;
    const int rank = bc->out[0].ndim;
    const int64_t n = bc->out[0].shape[0];
    for (int i = 0; i < bc->n_in; i++) {
        if (!s_has_in(bc, i))
            continue;
        const gx_view *v = &bc->in[i];
        if (bc->in_batched[i] ? v->ndim != rank || v->shape[0] != n
                              : v->ndim == rank && v->shape[0] != 1)
            return false;
    }
    bc->out_batched[0] = true;
    return true;
}

/* After a rule said yes: every batched input and output has rank >= 1 and
 * one size of axis 0. A rule that breaks this has a bug; the op then counts
 * as mixing rather than being split wrongly. */
static bool s_consistent(const gx_batch_ctx *bc)
{
    int64_t n = -1;
    for (int i = 0; i < bc->n_in; i++) {
        if (!gx_batch_in(bc, i))
            continue;
        if (bc->in[i].ndim < 1 || (n >= 0 && bc->in[i].shape[0] != n))
            return false;
        n = bc->in[i].shape[0];
    }
    for (int k = 0; k < bc->n_out; k++)
        if (bc->out_batched[k] &&
            (!s_has_out(bc, k) || bc->out[k].ndim < 1 || bc->out[k].shape[0] != n))
            return false;
    return true;
}

bool gx_op_batch_separable(gx_op op, const gx_batch_ctx *bc)
{
    const gx_op_schema *s = gx_op_schema_get(op);
    bool any = false;
    for (int k = 0; k < bc->n_out; k++)
        bc->out_batched[k] = false;
    for (int i = 0; i < bc->n_in; i++)
        any = any || gx_batch_in(bc, i);
    if (!any)
        return true;
    bool ok = false;
    if (!s || (s->flags & (GX_OPF_BATCH_COUPLED | GX_OPF_CONTROL)))
        ok = false;
    else if (s->batch)
        ok = s->batch(bc);
    else if (s->flags & GX_OPF_ELEMENTWISE)
        ok = gx_batch_broadcast(bc);
    if (ok && s_consistent(bc))
        return true;
    for (int k = 0; k < bc->n_out; k++)
        bc->out_batched[k] = false;
    return false;
}
