/*
 * Sequence and optional values at run time, and the ops over them
 * (GX_OPS_SEQUENCE). A sequence value is a gx_tensor of kind
 * GX_KIND_SEQUENCE that owns its items (each a tensor of its own shape);
 * the frame holds it in the heap slot of its value, like the data of a
 * dynamic tensor, and frees it at gxd_frame_fini. A none (an optional
 * without an element) has no data; a present optional is its element.
 * Values are never changed once made, so Identity, Optional and
 * OptionalGetElement give the same value under another name (the frame
 * owns it once); an op that changes a sequence makes a new one.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "ops/schema.h"

void gxd_view_free(gx_view *v)
{
    if (v->kind == GX_KIND_SEQUENCE) {
        gx_tensor *t = v->data;
        gx_tensor_destroy(&t);
    } else {
        free(v->data);
    }
    v->data = NULL;
}

int gxd_view_clone(gxd_frame *f, const gx_view *v, gx_view *out)
{
    *out = *v;
    if (v->kind == GX_KIND_NONE)
        return GX_OK;
    if (v->kind == GX_KIND_SEQUENCE) {
        if (!(out->data = gx_tensor_clone(v->data)))
            return gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory for a sequence");
        return GX_OK;
    }
    size_t nbytes = (size_t)v->numel * gx_dtype_size(v->dtype);
    if (!(out->data = gx_aligned_alloc(nbytes ? nbytes : 1)))
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory for %zu bytes", nbytes);
    if (nbytes)
        memcpy(out->data, v->data, nbytes);
    return GX_OK;
}

void gxd_frame_set(gxd_frame *f, int v, gx_view val)
{
    if (f->heap[v]) {
        gx_view old = f->val[v];
        old.data = f->heap[v];
        gxd_view_free(&old);
    }
    f->heap[v] = val.data;
    f->val[v] = val;
}

void gxd_frame_alias(gxd_frame *f, int v, const gx_view *val)
{
    if (f->heap[v]) {
        gx_view old = f->val[v];
        old.data = f->heap[v];
        gxd_view_free(&old);
        f->heap[v] = NULL;
    }
    f->val[v] = *val;
}

/* The view of a sequence's item (borrowed). */
static gx_view s_item_view(const gx_tensor *t)
{
    gx_view v = {.dtype = t->dtype, .ndim = t->ndim, .numel = t->numel, .data = t->data};
    memcpy(v.shape, t->shape, sizeof v.shape);
    return v;
}

/* The view of sequence t (owned by whoever holds the view's data). */
static gx_view s_seq_view(gx_tensor *t)
{
    return (gx_view){.dtype = t->dtype, .ndim = 0, .numel = 0, .data = t,
                     .kind = GX_KIND_SEQUENCE};
}

static const char *s_kind_name(gx_kind k)
{
    return k == GX_KIND_SEQUENCE ? "a sequence" : k == GX_KIND_NONE ? "none" : "a tensor";
}

/* Input i of step s, which must be present and of kind. */
static int s_input(gxd_frame *f, const gxd_step *s, int i, gx_kind kind, const gx_view **v)
{
    if (i >= s->n_formal || s->in[i] < 0)
        return gx_errf(f->err, f->errlen, GX_EGRAPH, "node '%s' (%s): input %d is missing",
                       s->node->name, s->node->op, i);
    *v = &f->val[s->in[i]];
    if ((*v)->kind != kind)
        return gx_errf(f->err, f->errlen, GX_EDTYPE, "node '%s' (%s): input %d must be %s, got %s",
                       s->node->name, s->node->op, i, s_kind_name(kind), s_kind_name((*v)->kind));
    if (kind == GX_KIND_TENSOR && (*v)->layout != GX_LAYOUT_PLAIN)
        return gx_errf(f->err, f->errlen, GX_EUNSUPPORTED,
                       "node '%s' (%s): input %d is not in the plain layout", s->node->name,
                       s->node->op, i);
    return GX_OK;
}

/* A copy of tensor view v as a new tensor (the sequence's item to be). */
static int s_item_new(gxd_frame *f, const gxd_step *s, const gx_view *v, gx_tensor **out)
{
    size_t nbytes = (size_t)v->numel * gx_dtype_size(v->dtype);
    if (!(*out = gx_tensor_new_copy(v->dtype, v->ndim, v->shape, v->data, nbytes)))
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "node '%s': out of memory", s->node->name);
    return GX_OK;
}

/* Index input i (an integer scalar) as a position in [lo, hi] after
 * adding n to a negative one; def when the input is omitted. */
static int s_position(gxd_frame *f, const gxd_step *s, int i, int64_t n, int64_t lo, int64_t hi,
                      int64_t def, int64_t *pos)
{
    if (i >= s->n_formal || s->in[i] < 0) {
        *pos = def;
        return GX_OK;
    }
    const gx_view *v;
    int rc = s_input(f, s, i, GX_KIND_TENSOR, &v);
    if (rc < 0)
        return rc;
    if ((v->dtype != GX_I64 && v->dtype != GX_I32) || v->numel != 1)
        return gx_errf(f->err, f->errlen, GX_EDTYPE,
                       "node '%s' (%s): position must be one int64 or int32", s->node->name,
                       s->node->op);
    int64_t p = v->dtype == GX_I64 ? *(const int64_t *)v->data : *(const int32_t *)v->data;
    if (p < 0)
        p += n;
    if (p < lo || p > hi)
        return gx_errf(f->err, f->errlen, GX_EINVAL,
                       "node '%s' (%s): position %lld is out of range for a sequence of %lld",
                       s->node->name, s->node->op, (long long)(p < 0 ? p - n : p), (long long)n);
    *pos = p;
    return GX_OK;
}

/* Output k of s: a new tensor of dtype and shape on the heap, *data its
 * bytes to fill. */
static int s_out_tensor(gxd_frame *f, const gxd_step *s, int k, gx_dtype dt, int ndim,
                        const int64_t *shape, void **data)
{
    const size_t es = gx_dtype_size(dt);
    int64_t n = gx_shape_numel(ndim, shape, f->lim->max_tensor_bytes / (int64_t)es);
    if (n < 0)
        return gx_errf(f->err, f->errlen, GX_ELIMIT,
                       "node '%s' (%s): output %d is larger than the tensor limit of %lld bytes",
                       s->node->name, s->node->op, k, (long long)f->lim->max_tensor_bytes);
    gx_view v = {.dtype = dt, .ndim = ndim, .numel = n};
    if (ndim > 0)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    const size_t nbytes = (size_t)n * es;
    if (!(v.data = gx_aligned_alloc(nbytes > 0 ? nbytes : 1)))
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "node '%s': out of memory", s->node->name);
    gxd_frame_set(f, s->out[k], v);
    *data = v.data;
    return GX_OK;
}

/* Makes sequence t (owned; freed on failure) output k of s. */
static int s_out_seq(gxd_frame *f, const gxd_step *s, int k, gx_tensor *t)
{
    if (!t)
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "node '%s': out of memory", s->node->name);
    gxd_frame_set(f, s->out[k], s_seq_view(t));
    return GX_OK;
}

static int s_construct(gxd_frame *f, const gxd_step *s)
{
    const gx_view *v;
    int rc = s_input(f, s, 0, GX_KIND_TENSOR, &v);
    if (rc < 0)
        return rc;
    gx_tensor *seq = gx_sequence_new(v->dtype), *item = NULL;
    for (int i = 0; seq && i < s->n_formal && rc == GX_OK; i++) {
        if ((rc = s_input(f, s, i, GX_KIND_TENSOR, &v)) < 0)
            break;
        if (v->dtype != seq->dtype)
            rc = gx_errf(f->err, f->errlen, GX_EDTYPE,
                         "node '%s' (SequenceConstruct): input %d is %s, input 0 %s",
                         s->node->name, i, gx_dtype_name(v->dtype), gx_dtype_name(seq->dtype));
        else if ((rc = s_item_new(f, s, v, &item)) == GX_OK && gx_sequence_append(seq, &item) < 0)
            rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
    }
    if (rc < 0) {
        gx_tensor_destroy(&seq);
        return rc;
    }
    return s_out_seq(f, s, 0, seq);
}

/* A copy of sequence in without item `skip` (-1: none), with `item`
 * (owned) inserted at position `at` (-1: none). */
static gx_tensor *s_seq_edit(const gx_tensor *in, int64_t skip, int64_t at, gx_tensor *item)
{
    gx_tensor *seq = gx_sequence_new(in->dtype);
    for (size_t i = 0; seq && i <= in->n_items; i++) {
        if ((int64_t)i == at && gx_sequence_append(seq, &item) < 0)
            gx_tensor_destroy(&seq);
        if (!seq || i == in->n_items || (int64_t)i == skip)
            continue;
        gx_tensor *c = gx_tensor_clone(in->items[i]);
        if (!c || gx_sequence_append(seq, &c) < 0)
            gx_tensor_destroy(&seq);
    }
    gx_tensor_destroy(&item);
    return seq;
}

static int s_insert(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv, *tv;
    int rc;
    int64_t at;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0 ||
        (rc = s_input(f, s, 1, GX_KIND_TENSOR, &tv)) < 0)
        return rc;
    const gx_tensor *in = sv->data;
    int64_t n = (int64_t)in->n_items;
    if ((rc = s_position(f, s, 2, n, 0, n, n, &at)) < 0)
        return rc;
    if (tv->dtype != in->dtype)
        return gx_errf(f->err, f->errlen, GX_EDTYPE,
                       "node '%s' (SequenceInsert): a %s tensor into a sequence of %s",
                       s->node->name, gx_dtype_name(tv->dtype), gx_dtype_name(in->dtype));
    gx_tensor *item;
    if ((rc = s_item_new(f, s, tv, &item)) < 0)
        return rc;
    return s_out_seq(f, s, 0, s_seq_edit(in, -1, at, item));
}

static int s_erase(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv;
    int rc;
    int64_t at;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0)
        return rc;
    const gx_tensor *in = sv->data;
    int64_t n = (int64_t)in->n_items;
    if ((rc = s_position(f, s, 1, n, 0, n - 1, n - 1, &at)) < 0)
        return rc;
    return s_out_seq(f, s, 0, s_seq_edit(in, at, -1, NULL));
}

static int s_at(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv;
    int rc;
    int64_t at;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0)
        return rc;
    const gx_tensor *in = sv->data;
    int64_t n = (int64_t)in->n_items;
    if ((rc = s_position(f, s, 1, n, 0, n - 1, 0, &at)) < 0)
        return rc;
    const gx_tensor *it = in->items[at];
    void *data;
    if ((rc = s_out_tensor(f, s, 0, it->dtype, it->ndim, it->shape, &data)) < 0)
        return rc;
    if (it->nbytes)
        memcpy(data, it->data, it->nbytes);
    return GX_OK;
}

static int s_length(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv;
    void *data;
    int rc;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0 ||
        (rc = s_out_tensor(f, s, 0, GX_I64, 0, NULL, &data)) < 0)
        return rc;
    *(int64_t *)data = (int64_t)((const gx_tensor *)sv->data)->n_items;
    return GX_OK;
}

static int s_split(gxd_frame *f, const gxd_step *s)
{
    const gx_view *x;
    int rc;
    if ((rc = s_input(f, s, 0, GX_KIND_TENSOR, &x)) < 0)
        return rc;
    int64_t axis = s->attr[GX_SPLIT_TO_SEQUENCE_AXIS].i;
    if (axis < -x->ndim || axis >= x->ndim)
        return gx_errf(f->err, f->errlen, GX_EATTR,
                       "node '%s' (SplitToSequence): axis %lld is out of range for rank %d",
                       s->node->name, (long long)axis, x->ndim);
    if (axis < 0)
        axis += x->ndim;
    const int64_t dim = x->shape[axis];
    int64_t outer = 1, inner = (int64_t)gx_dtype_size(x->dtype);
    for (int d = 0; d < axis; d++)
        outer *= x->shape[d];
    for (int d = (int)axis + 1; d < x->ndim; d++)
        inner *= x->shape[d];
    /* the pieces' lengths: from split, else 1 each */
    const gx_view *sp = NULL;
    if (s->n_formal > 1 && s->in[1] >= 0 && (rc = s_input(f, s, 1, GX_KIND_TENSOR, &sp)) < 0)
        return rc;
    if (sp && ((sp->dtype != GX_I64 && sp->dtype != GX_I32) || sp->ndim > 1))
        return gx_errf(f->err, f->errlen, GX_EDTYPE,
                       "node '%s' (SplitToSequence): split must be an int64 or int32 scalar or 1-D tensor",
                       s->node->name);
    const bool keep = !sp && s->attr[GX_SPLIT_TO_SEQUENCE_KEEPDIMS].i == 0 ? false : true;
    int64_t n = !sp ? dim : sp->ndim == 1 ? sp->numel : -1, chunk = 1;
    if (n < 0) { /* a scalar: pieces of that length, the last shorter */
        chunk = sp->dtype == GX_I64 ? *(const int64_t *)sp->data : *(const int32_t *)sp->data;
        if (chunk <= 0)
            return gx_errf(f->err, f->errlen, GX_EINVAL,
                           "node '%s' (SplitToSequence): split %lld must be positive",
                           s->node->name, (long long)chunk);
        n = (dim + chunk - 1) / chunk;
    }
    gx_tensor *seq = gx_sequence_new(x->dtype);
    int64_t at = 0;
    for (int64_t i = 0; seq && i < n && rc == GX_OK; i++) {
        int64_t len = chunk;
        if (sp && sp->ndim == 1)
            len = sp->dtype == GX_I64 ? ((const int64_t *)sp->data)[i]
                                      : ((const int32_t *)sp->data)[i];
        else if (sp)
            len = at + chunk > dim ? dim - at : chunk;
        if (len < 0 || len > dim - at) {
            rc = gx_errf(f->err, f->errlen, GX_EINVAL,
                         "node '%s' (SplitToSequence): the split lengths do not add up to %lld",
                         s->node->name, (long long)dim);
            break;
        }
        int64_t shape[GX_MAX_DIMS];
        int nd = 0;
        for (int d = 0; d < x->ndim; d++)
            if (d != axis || keep)
                shape[nd++] = d == axis ? len : x->shape[d];
        gx_tensor *item = gx_tensor_new(x->dtype, nd, shape);
        if (!item) {
            rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
            break;
        }
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)item->data + o * len * inner,
                   (const char *)x->data + (o * dim + at) * inner, (size_t)(len * inner));
        at += len;
        if (gx_sequence_append(seq, &item) < 0)
            rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
    }
    if (rc == GX_OK && at != dim)
        rc = gx_errf(f->err, f->errlen, GX_EINVAL,
                     "node '%s' (SplitToSequence): the split lengths add up to %lld, not %lld",
                     s->node->name, (long long)at, (long long)dim);
    if (rc < 0) {
        gx_tensor_destroy(&seq);
        return rc;
    }
    return s_out_seq(f, s, 0, seq);
}

static int s_concat(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv;
    int rc;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0)
        return rc;
    const gx_tensor *in = sv->data;
    const bool new_axis = s->attr[GX_CONCAT_FROM_SEQUENCE_NEW_AXIS].i == 1;
    if (!in->n_items)
        return gx_errf(f->err, f->errlen, GX_EINVAL,
                       "node '%s' (ConcatFromSequence): the sequence is empty", s->node->name);
    const gx_tensor *t0 = in->items[0];
    const int r = t0->ndim + new_axis;
    int64_t axis = s->attr[GX_CONCAT_FROM_SEQUENCE_AXIS].i;
    if (axis < -r || axis >= r || r > GX_MAX_DIMS)
        return gx_errf(f->err, f->errlen, GX_EATTR,
                       "node '%s' (ConcatFromSequence): axis %lld is out of range for rank %d",
                       s->node->name, (long long)axis, r);
    if (axis < 0)
        axis += r;
    /* every item as [outer, len, inner] with len 1 on a new axis */
    int64_t shape[GX_MAX_DIMS], outer = 1, inner = (int64_t)gx_dtype_size(in->dtype), total = 0;
    for (int d = 0, k = 0; d < r; d++)
        shape[d] = new_axis && d == axis ? 1 : t0->shape[k++];
    for (int d = 0; d < axis; d++)
        outer *= shape[d];
    for (int d = (int)axis + 1; d < r; d++)
        inner *= shape[d];
    for (size_t i = 0; i < in->n_items; i++) {
        const gx_tensor *t = in->items[i];
        bool ok = t->ndim == t0->ndim;
        for (int d = 0, k = 0; ok && d < r; d++) {
            int64_t sz = new_axis && d == axis ? 1 : t->shape[k++];
            ok = d == axis || sz == shape[d];
            total += d == axis ? sz : 0;
        }
        if (!ok)
            return gx_errf(f->err, f->errlen, GX_ESHAPE,
                           "node '%s' (ConcatFromSequence): item %zu's shape does not match item 0's but along axis %lld",
                           s->node->name, i, (long long)axis);
    }
    shape[axis] = total;
    void *data;
    if ((rc = s_out_tensor(f, s, 0, in->dtype, r, shape, &data)) < 0)
        return rc;
    int64_t at = 0;
    for (size_t i = 0; i < in->n_items; i++) {
        const gx_tensor *t = in->items[i];
        int64_t len = new_axis ? 1 : t->shape[axis];
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)data + (o * total + at) * inner,
                   (const char *)t->data + o * len * inner, (size_t)(len * inner));
        at += len;
    }
    return GX_OK;
}

static int s_map(gxd_frame *f, const gxd_step *s)
{
    const gx_view *sv;
    int rc;
    if ((rc = s_input(f, s, 0, GX_KIND_SEQUENCE, &sv)) < 0)
        return rc;
    const gx_graph *body = s->attr[GX_SEQUENCE_MAP_BODY].g;
    const size_t n = ((const gx_tensor *)sv->data)->n_items;
    for (int j = 1; j < s->n_formal; j++) {
        const gx_view *v = s->in[j] >= 0 ? &f->val[s->in[j]] : NULL;
        if (!v || v->kind == GX_KIND_NONE)
            return gx_errf(f->err, f->errlen, GX_EINVAL, "node '%s' (SequenceMap): input %d is missing",
                           s->node->name, j);
        if (v->kind == GX_KIND_SEQUENCE && ((const gx_tensor *)v->data)->n_items != n)
            return gx_errf(f->err, f->errlen, GX_ESHAPE,
                           "node '%s' (SequenceMap): sequence input %d has %zu items, input 0 %zu",
                           s->node->name, j, ((const gx_tensor *)v->data)->n_items, n);
    }
    gx_view *formal = calloc((size_t)s->n_formal + 1, sizeof *formal);
    gx_view *outs = calloc((size_t)s->n_out + 1, sizeof *outs);
    gx_tensor **seqs = calloc((size_t)s->n_out + 1, sizeof *seqs);
    if (!formal || !outs || !seqs) {
        rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < s->n_out; k++) {
        gx_dtype dt = body->outputs[k].dtype < GX_DTYPE_COUNT ? body->outputs[k].dtype : GX_F32;
        if (!(seqs[k] = gx_sequence_new(dt))) {
            rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < s->n_formal; j++) {
            const gx_view *v = &f->val[s->in[j]];
            formal[j] = v->kind == GX_KIND_SEQUENCE ? s_item_view(((const gx_tensor *)v->data)->items[i])
                                                    : *v;
        }
        if ((rc = gxd_exec_should_stop(f->stop)) < 0 ||
            (rc = gxd_exec_subgraph(f, s, "body", formal, (size_t)s->n_formal, outs)) < 0)
            goto out;
        for (int k = 0; k < s->n_out; k++) {
            gx_view *o = &outs[k];
            gx_tensor *item = NULL;
            if (rc == GX_OK && o->kind != GX_KIND_TENSOR)
                rc = gx_errf(f->err, f->errlen, GX_EDTYPE,
                             "node '%s' (SequenceMap): body output %d is %s; it must be a tensor",
                             s->node->name, k, s_kind_name(o->kind));
            else if (rc == GX_OK && i == 0 && o->dtype != seqs[k]->dtype)
                seqs[k]->dtype = o->dtype;
            if (rc == GX_OK && o->dtype != seqs[k]->dtype)
                rc = gx_errf(f->err, f->errlen, GX_EDTYPE,
                             "node '%s' (SequenceMap): body output %d changes dtype", s->node->name, k);
            if (rc == GX_OK) { /* the item takes the body output's heap copy */
                item = gx_tensor_adopt(o->dtype, o->ndim, o->shape, o->data);
                o->data = NULL;
                if (!item || gx_sequence_append(seqs[k], &item) < 0)
                    rc = gx_errf(f->err, f->errlen, GX_ENOMEM, "out of memory");
            }
            gxd_view_free(o);
        }
        if (rc < 0)
            goto out;
    }
    for (int k = 0; k < s->n_out; k++) {
        gxd_frame_set(f, s->out[k], s_seq_view(seqs[k]));
        seqs[k] = NULL;
    }
out:
    for (int k = 0; seqs && k < s->n_out; k++)
        gx_tensor_destroy(&seqs[k]);
    free(seqs);
    free(outs);
    free(formal);
    return rc;
}

int gxd_exec_values(gxd_frame *f, const gxd_step *s)
{
    const gx_view *v = s->n_formal > 0 && s->in[0] >= 0 ? &f->val[s->in[0]] : NULL;
    void *data;
    int rc;
    gx_dtype dt;
    if (s->op == GX_OP_SEQUENCE_EMPTY) {
        if (!gx_onnx_dtype(s->attr[GX_SEQUENCE_EMPTY_DTYPE].i, &dt))
            return gx_errf(f->err, f->errlen, GX_EDTYPE, "node '%s' (SequenceEmpty): bad dtype",
                           s->node->name);
        return s_out_seq(f, s, 0, gx_sequence_new(dt));
    }
    if (s->op == GX_OP_SEQUENCE_CONSTRUCT)
        return s_construct(f, s);
    if (s->op == GX_OP_SEQUENCE_INSERT)
        return s_insert(f, s);
    if (s->op == GX_OP_SEQUENCE_AT)
        return s_at(f, s);
    if (s->op == GX_OP_SEQUENCE_ERASE)
        return s_erase(f, s);
    if (s->op == GX_OP_SEQUENCE_LENGTH)
        return s_length(f, s);
    if (s->op == GX_OP_SPLIT_TO_SEQUENCE)
        return s_split(f, s);
    if (s->op == GX_OP_CONCAT_FROM_SEQUENCE)
        return s_concat(f, s);
    if (s->op == GX_OP_SEQUENCE_MAP)
        return s_map(f, s);
    if (s->op == GX_OP_OPTIONAL) {
        gx_view none = {.dtype = GX_F32, .kind = GX_KIND_NONE};
        gxd_frame_alias(f, s->out[0], v ? v : &none);
        return GX_OK;
    }
    if (s->op == GX_OP_OPTIONAL_HAS_ELEMENT) {
        if ((rc = s_out_tensor(f, s, 0, GX_BOOL, 0, NULL, &data)) < 0)
            return rc;
        *(uint8_t *)data = v && v->kind != GX_KIND_NONE;
        return GX_OK;
    }
    if (s->op == GX_OP_OPTIONAL_GET_ELEMENT) {
        if (!v || v->kind == GX_KIND_NONE)
            return gx_errf(f->err, f->errlen, GX_EINVAL,
                           "node '%s' (OptionalGetElement): the optional input has no element",
                           s->node->name);
        gxd_frame_alias(f, s->out[0], v);
        return GX_OK;
    }
    return gx_errf(f->err, f->errlen, GX_EINTERNAL, "node '%s' (%s) has no kernel",
                   s->node->name, s->node->op);
}
