/* Schemas of the nn family's normalising ops, all on float32: Softmax,
 * LogSoftmax and Hardmax (opset 13: along one axis), BatchNormalization
 * (opset 15, inference or training statistics), LayerNormalization,
 * RMSNormalization (opset 23), LpNormalization, GroupNormalization
 * (opsets 18 and 21), InstanceNormalization, MeanVarianceNormalization,
 * LRN, Dropout (inference copies; training draws, ops/cpu/random.c), and RotaryEmbedding
 * (opset 23). The spatial ops (Resize, Upsample, Pad,
 * DepthToSpace, SpaceToDepth) are in ops/schema_spatial.c. */
#include <string.h>

#include "ops/batch.h"
#include "ops/cpu/cpu.h"
#include "ops/schema.h"

/* Bytes in and out, plus flops_per_elem for each element of output 0. */
static gx_cost s_cost_per_elem(const gx_infer *ic, double flops_per_elem)
{
    return (gx_cost){.flops = flops_per_elem * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

static const char *s_dtname(gx_dtype dt)
{
    const char *n = gx_dtype_name(dt);
    return n ? n : "unknown dtype";
}

/* Input i is present, float32 and has shape [n]. */
static int s_need_vec(gx_infer *ic, const char *op, int i, const char *what, int64_t n)
{
    int rc = gx_infer_need_f32(ic, op, i);
    if (rc < 0)
        return rc;
    const gx_view *v = &ic->in[i];
    if (v->ndim != 1 || v->shape[0] != n) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s has shape %s, expected [%lld]", op, what,
                             gx_shape_str(v->ndim, v->shape, s, sizeof s), (long long)n);
    }
    return GX_OK;
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

static const gx_attr_spec s_softmax_attrs[] = {
    [GX_SOFTMAX_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
};
_Static_assert(sizeof s_softmax_attrs / sizeof s_softmax_attrs[0] == GX_SOFTMAX_NATTRS,
               "Softmax attrs");

/* A float32 tensor of rank >= 1 and an axis in range; same shape out. */
static int s_infer_softmax_like(gx_infer *ic, const char *op)
{
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input is a scalar; rank >= 1 needed", op);
    if (!gx_axis_norm(ic->attr[GX_SOFTMAX_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)ic->attr[GX_SOFTMAX_AXIS].i, x->ndim);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

static int s_infer_softmax(gx_infer *ic)
{
    return s_infer_softmax_like(ic, "Softmax");
}

static int s_infer_logsoftmax(gx_infer *ic)
{
    return s_infer_softmax_like(ic, "LogSoftmax");
}

static int s_infer_hardmax(gx_infer *ic)
{
    return s_infer_softmax_like(ic, "Hardmax");
}

/* Each row along axis stands alone: separable unless axis is the batch's. */
static bool s_batch_softmax(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_SOFTMAX_AXIS);
}

/* max, subtract, exp (~10), sum, scale */
static gx_cost s_cost_softmax(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 14);
}

/* max, then one compare per element */
static gx_cost s_cost_hardmax(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 2);
}

const gx_op_schema gx_schema_SOFTMAX = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_softmax_attrs, .n_attrs = GX_SOFTMAX_NATTRS,
    .infer = s_infer_softmax, .cost = s_cost_softmax, .batch = s_batch_softmax,
};

const gx_op_schema gx_schema_LOGSOFTMAX = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_softmax_attrs, .n_attrs = GX_SOFTMAX_NATTRS,
    .infer = s_infer_logsoftmax, .cost = s_cost_softmax, .batch = s_batch_softmax,
};

const gx_op_schema gx_schema_HARDMAX = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_softmax_attrs, .n_attrs = GX_SOFTMAX_NATTRS,
    .infer = s_infer_hardmax, .cost = s_cost_hardmax, .batch = s_batch_softmax,
};

/* ---- BatchNormalization ---- */

static const gx_attr_spec s_batchnorm_attrs[] = {
    [GX_BATCHNORM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-5},
    [GX_BATCHNORM_MOMENTUM] = {.name = "momentum", .type = GX_ATTR_FLOAT, .def_f = 0.9},
    [GX_BATCHNORM_TRAINING_MODE] = {.name = "training_mode", .type = GX_ATTR_INT, .def_i = 0},
    /* opsets 7-8: 1 (per-channel statistics, the only later behaviour) */
    [GX_BATCHNORM_SPATIAL] = {.name = "spatial", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_batchnorm_attrs / sizeof s_batchnorm_attrs[0] == GX_BATCHNORM_NATTRS,
               "BatchNormalization attrs");

/* X [N, C, ...] and four [C] vectors (scale, B, mean, var). Inference mode
 * has one output; training mode may add running_mean and running_var. */
static int s_infer_batchnorm(gx_infer *ic)
{
    static const char *const what[] = {"X", "scale", "B", "input_mean", "input_var"};
    const char *op = "BatchNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X has rank %d; [N, C, ...] needed", op, x->ndim);
    for (int i = 1; i < 5; i++)
        if ((rc = s_need_vec(ic, op, i, what[i], x->shape[1])) < 0)
            return rc;
    if (ic->attr[GX_BATCHNORM_SPATIAL].i != 1)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: spatial=%lld (statistics per element) is not supported", op,
                             (long long)ic->attr[GX_BATCHNORM_SPATIAL].i);
    int64_t training = ic->attr[GX_BATCHNORM_TRAINING_MODE].i;
    if (training != 0 && training != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: training_mode %lld is not 0 or 1", op,
                             (long long)training);
    if (!training && ic->n_out > 1)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: running_mean and running_var are outputs of training_mode=1 "
                             "only",
                             op);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    for (int i = 1; i < ic->n_out; i++)
        gx_view_set(&ic->out[i], GX_F32, 1, &x->shape[1]);
    return GX_OK;
}

/* inference: subtract, multiply, add; training: two passes of statistics */
static gx_cost s_cost_batchnorm(const gx_infer *ic)
{
    return s_cost_per_elem(ic, ic->attr[GX_BATCHNORM_TRAINING_MODE].i ? 7 : 3);
}

/* Inference mode normalises with the given statistics, sample by sample;
 * training mode takes them over the batch. */
static bool s_batch_batchnorm(const gx_batch_ctx *bc)
{
    return bc->attr[GX_BATCHNORM_TRAINING_MODE].i == 0 && gx_batch_samplewise(bc);
}

const gx_op_schema gx_schema_BATCHNORM = {
    .min_in = 5, .max_in = 5, .min_out = 1, .max_out = 3,
    .attrs = s_batchnorm_attrs, .n_attrs = GX_BATCHNORM_NATTRS,
    .infer = s_infer_batchnorm, .cost = s_cost_batchnorm, .batch = s_batch_batchnorm,
};

/* ---- LayerNormalization ---- */

static const gx_attr_spec s_layernorm_attrs[] = {
    [GX_LAYERNORM_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
    [GX_LAYERNORM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-5},
    [GX_LAYERNORM_STASH_TYPE] = {.name = "stash_type", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_layernorm_attrs / sizeof s_layernorm_attrs[0] == GX_LAYERNORM_NATTRS,
               "LayerNormalization attrs");

/* Scale (and B) must broadcast to the normalised shape X.shape[axis:]
 * without growing: rank <= r - axis, each dim 1 or equal. */
static int s_need_norm_shaped(gx_infer *ic, const char *op, int i, const char *what, int axis)
{
    int rc = gx_infer_need_f32(ic, op, i);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0], *v = &ic->in[i];
    int nn = x->ndim - axis;
    bool ok = v->ndim <= nn;
    for (int d = 0; ok && d < v->ndim; d++) {
        int64_t want = x->shape[x->ndim - v->ndim + d];
        ok = v->shape[d] == want || v->shape[d] == 1;
    }
    if (!ok) {
        char sv[GX_SHAPE_STRLEN], sn[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: %s of shape %s does not broadcast to the normalised shape %s",
                             op, what, gx_shape_str(v->ndim, v->shape, sv, sizeof sv),
                             gx_shape_str(nn, x->shape + axis, sn, sizeof sn));
    }
    return GX_OK;
}

static int s_infer_layernorm(gx_infer *ic)
{
    const char *op = "LayerNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X is a scalar; rank >= 1 needed", op);
    if (!gx_axis_norm(ic->attr[GX_LAYERNORM_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)ic->attr[GX_LAYERNORM_AXIS].i, x->ndim);
    int64_t stash = ic->attr[GX_LAYERNORM_STASH_TYPE].i;
    if (stash != 1 && stash != 11)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: stash_type %lld not supported (1 = float32 or 11 = float64)",
                             op, (long long)stash);
    if ((rc = s_need_norm_shaped(ic, op, 1, "Scale", axis)) < 0)
        return rc;
    if (ic->n_in > 2 && ic->in[2].ndim >= 0 && (rc = s_need_norm_shaped(ic, op, 2, "B", axis)) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    int64_t st[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        st[d] = d < axis ? x->shape[d] : 1;
    for (int i = 1; i < ic->n_out; i++)
        gx_view_set(&ic->out[i], stash == 11 ? GX_F64 : GX_F32, x->ndim, st);
    return GX_OK;
}

/* two passes of statistics, then subtract, multiply twice, add */
static gx_cost s_cost_layernorm(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 8);
}

/* Statistics over X.shape[axis:]: within a sample when axis >= 1. */
static bool s_batch_layernorm(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_LAYERNORM_AXIS);
}

const gx_op_schema gx_schema_LAYERNORM = {
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 3,
    .attrs = s_layernorm_attrs, .n_attrs = GX_LAYERNORM_NATTRS,
    .infer = s_infer_layernorm, .cost = s_cost_layernorm, .batch = s_batch_layernorm,
};

/* ---- RMSNormalization (opset 23) ---- */

static const gx_attr_spec s_rmsnorm_attrs[] = {
    [GX_RMSNORM_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
    [GX_RMSNORM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-5},
    [GX_RMSNORM_STASH_TYPE] = {.name = "stash_type", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_rmsnorm_attrs / sizeof s_rmsnorm_attrs[0] == GX_RMSNORM_NATTRS,
               "RMSNormalization attrs");

/* Y = X / sqrt(mean(X^2 over X.shape[axis:]) + epsilon) * scale. */
static int s_infer_rmsnorm(gx_infer *ic)
{
    const char *op = "RMSNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X is a scalar; rank >= 1 needed", op);
    if (!gx_axis_norm(ic->attr[GX_RMSNORM_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)ic->attr[GX_RMSNORM_AXIS].i, x->ndim);
    const int64_t stash = ic->attr[GX_RMSNORM_STASH_TYPE].i;
    if (stash != 1 && stash != 11)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: stash_type %lld not supported (1 = float32 or 11 = float64)",
                             op, (long long)stash);
    if ((rc = s_need_norm_shaped(ic, op, 1, "scale", axis)) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* a pass of squares, then a multiply twice */
static gx_cost s_cost_rmsnorm(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 4);
}

static bool s_batch_rmsnorm(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_RMSNORM_AXIS);
}

const gx_op_schema gx_schema_RMSNORM = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_rmsnorm_attrs, .n_attrs = GX_RMSNORM_NATTRS,
    .infer = s_infer_rmsnorm, .cost = s_cost_rmsnorm, .batch = s_batch_rmsnorm,
};

/* ---- RotaryEmbedding (opset 23) ---- */

static const gx_attr_spec s_rotary_attrs[] = {
    [GX_ROTARY_INTERLEAVED] = {.name = "interleaved", .type = GX_ATTR_INT, .def_i = 0},
    [GX_ROTARY_NUM_HEADS] = {.name = "num_heads", .type = GX_ATTR_INT, .def_i = 0},
    [GX_ROTARY_DIM] = {.name = "rotary_embedding_dim", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_rotary_attrs / sizeof s_rotary_attrs[0] == GX_ROTARY_NATTRS,
               "RotaryEmbedding attrs");

/* X is [batch, num_heads, seq, head_size] or [batch, seq, num_heads *
 * head_size] (then num_heads is required); the first rotary_embedding_dim
 * (default head_size) values of each head rotate by the cos/sin row of
 * their position: cos_cache[position_ids[b, s]] ([max_pos, dim / 2] with
 * position_ids) or cos_cache[b, s] ([batch, seq, dim / 2] without).
 * Position ids are checked whenever their values are known; the kernel
 * rotates by cos = sin = 0 (zeros) for one out of range, as the gathers do. */
static int s_infer_rotary(gx_infer *ic)
{
    const char *op = "RotaryEmbedding";
    int rc;
    if ((rc = gx_infer_need_f32(ic, op, 0)) < 0 || (rc = gx_infer_need_f32(ic, op, 1)) < 0 ||
        (rc = gx_infer_need_f32(ic, op, 2)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *cs = &ic->in[1], *sn = &ic->in[2];
    const bool has_pos = ic->n_in > 3 && ic->in[3].ndim >= 0;
    const int64_t interleaved = ic->attr[GX_ROTARY_INTERLEAVED].i;
    const int64_t nh = ic->attr[GX_ROTARY_NUM_HEADS].i, rd = ic->attr[GX_ROTARY_DIM].i;
    char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
    if (interleaved != 0 && interleaved != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: interleaved is %lld, expected 0 or 1", op,
                             (long long)interleaved);
    if (x->ndim != 3 && x->ndim != 4)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: X has shape %s; [batch, num_heads, seq, head_size] or "
                             "[batch, seq, hidden] needed",
                             op, gx_shape_str(x->ndim, x->shape, sa, sizeof sa));
    const int64_t batch = x->shape[0], seq = x->shape[x->ndim == 4 ? 2 : 1];
    int64_t head;
    if (x->ndim == 4) {
        head = x->shape[3];
    } else {
        if (nh < 1)
            return gx_infer_errf(ic, GX_EATTR, "%s: a 3-D X needs num_heads > 0 (got %lld)", op,
                                 (long long)nh);
        if (x->shape[2] % nh != 0)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: hidden size %lld is not a multiple of "
                                 "num_heads %lld", op, (long long)x->shape[2], (long long)nh);
        head = x->shape[2] / nh;
    }
    const int64_t dim = rd ? rd : head;
    if (dim < 0 || dim > head || dim % 2 != 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: rotary_embedding_dim %lld must be even and at most the head "
                             "size %lld",
                             op, (long long)dim, (long long)head);
    if (cs->ndim != sn->ndim ||
        memcmp(cs->shape, sn->shape, (size_t)cs->ndim * sizeof cs->shape[0]) != 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: cos_cache %s and sin_cache %s differ", op,
                             gx_shape_str(cs->ndim, cs->shape, sa, sizeof sa),
                             gx_shape_str(sn->ndim, sn->shape, sb, sizeof sb));
    if (has_pos) {
        const gx_view *p = &ic->in[3];
        if (p->dtype != GX_I64)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: position_ids is %s, expected int64", op,
                                 s_dtname(p->dtype));
        if (p->ndim != 2 || p->shape[0] != batch || p->shape[1] != seq)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: position_ids has shape %s, expected "
                                 "[%lld, %lld]", op, gx_shape_str(p->ndim, p->shape, sa, sizeof sa),
                                 (long long)batch, (long long)seq);
        if (cs->ndim != 2 || cs->shape[1] != dim / 2)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: with position_ids, cos_cache has shape %s, "
                                 "expected [max_position_id + 1, %lld]", op,
                                 gx_shape_str(cs->ndim, cs->shape, sa, sizeof sa),
                                 (long long)(dim / 2));
        const int64_t *pv = gx_infer_value(ic, 3);
        for (int64_t i = 0; pv && i < p->numel; i++)
            if (pv[i] < 0 || pv[i] >= cs->shape[0])
                return gx_infer_errf(ic, GX_ESHAPE, "%s: position id %lld is outside the cache "
                                     "[0, %lld)", op, (long long)pv[i], (long long)cs->shape[0]);
    } else if (cs->ndim != 3 || cs->shape[0] != batch || cs->shape[1] != seq ||
               cs->shape[2] != dim / 2) {
        return gx_infer_errf(ic, GX_ESHAPE, "%s: without position_ids, cos_cache has shape %s, "
                             "expected [%lld, %lld, %lld]", op,
                             gx_shape_str(cs->ndim, cs->shape, sa, sizeof sa), (long long)batch,
                             (long long)seq, (long long)(dim / 2));
    }
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* two multiplies and an add per rotated value */
static gx_cost s_cost_rotary(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 3);
}

/* X's samples stay apart: with position_ids (batched with X) the caches
 * are a table that must not be batched; without, the caches are per
 * sample and batched with X. */
static bool s_batch_rotary(const gx_batch_ctx *bc)
{
    const bool has_pos = bc->n_in > 3 && bc->in[3].ndim >= 0;
    if (!gx_batch_in(bc, 0) || bc->in[0].ndim < 1)
        return false;
    const int64_t n = bc->in[0].shape[0];
    for (int i = 1; i < bc->n_in; i++) {
        if (i == 3 && !has_pos)
            continue;
        const bool want = has_pos ? i == 3 : true;
        if (gx_batch_in(bc, i) != want || (want && bc->in[i].shape[0] != n))
            return false;
    }
    bc->out_batched[0] = true;
    return true;
}

const gx_op_schema gx_schema_ROTARY_EMBEDDING = {
    .min_in = 3, .max_in = 4, .min_out = 1, .max_out = 1,
    .attrs = s_rotary_attrs, .n_attrs = GX_ROTARY_NATTRS,
    .infer = s_infer_rotary, .cost = s_cost_rotary, .batch = s_batch_rotary,
};

/* ---- InstanceNormalization ---- */

static const gx_attr_spec s_instancenorm_attrs[] = {
    [GX_INSTANCENORM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-5},
};
_Static_assert(sizeof s_instancenorm_attrs / sizeof s_instancenorm_attrs[0] ==
                   GX_INSTANCENORM_NATTRS,
               "InstanceNormalization attrs");

static int s_infer_instancenorm(gx_infer *ic)
{
    const char *op = "InstanceNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C, ...] needed", op,
                             x->ndim);
    if ((rc = s_need_vec(ic, op, 1, "scale", x->shape[1])) < 0 ||
        (rc = s_need_vec(ic, op, 2, "B", x->shape[1])) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

static gx_cost s_cost_norm(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 7);
}

const gx_op_schema gx_schema_INSTANCENORM = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_instancenorm_attrs, .n_attrs = GX_INSTANCENORM_NATTRS,
    .infer = s_infer_instancenorm, .cost = s_cost_norm, .batch = gx_batch_samplewise,
};

/* ---- LpNormalization (opset 1) ---- */

static const gx_attr_spec s_lpnorm_attrs[] = {
    [GX_LPNORM_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
    [GX_LPNORM_P] = {.name = "p", .type = GX_ATTR_INT, .def_i = 2},
};
_Static_assert(sizeof s_lpnorm_attrs / sizeof s_lpnorm_attrs[0] == GX_LPNORM_NATTRS,
               "LpNormalization attrs");

/* y = x / ||x||_p along axis, p 1 (sum of |x|) or 2 (root of the sum of
 * squares); a zero norm gives 0 / 0 = NaN, as the formula does. */
static int s_infer_lpnorm(gx_infer *ic)
{
    const char *op = "LpNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int axis;
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input is a scalar; rank >= 1 needed", op);
    if (!gx_axis_norm(ic->attr[GX_LPNORM_AXIS].i, x->ndim, &axis))
        return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                             (long long)ic->attr[GX_LPNORM_AXIS].i, x->ndim);
    const int64_t p = ic->attr[GX_LPNORM_P].i;
    if (p != 1 && p != 2)
        return gx_infer_errf(ic, GX_EATTR, "%s: p is %lld; the specification allows 1 or 2", op,
                             (long long)p);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* a pass of |x| or x^2, then a division */
static gx_cost s_cost_lpnorm(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 3);
}

static bool s_batch_lpnorm(const gx_batch_ctx *bc)
{
    return gx_batch_axis_not0(bc, GX_LPNORM_AXIS);
}

const gx_op_schema gx_schema_LPNORM = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_lpnorm_attrs, .n_attrs = GX_LPNORM_NATTRS,
    .infer = s_infer_lpnorm, .cost = s_cost_lpnorm, .batch = s_batch_lpnorm,
};

/* ---- GroupNormalization (opsets 18 and 21) ---- */

static const gx_attr_spec s_groupnorm_attrs[] = {
    [GX_GROUPNORM_EPSILON] = {.name = "epsilon", .type = GX_ATTR_FLOAT, .def_f = 1e-5},
    [GX_GROUPNORM_NUM_GROUPS] = {.name = "num_groups", .type = GX_ATTR_INT, .required = true},
    [GX_GROUPNORM_STASH_TYPE] = {.name = "stash_type", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_groupnorm_attrs / sizeof s_groupnorm_attrs[0] == GX_GROUPNORM_NATTRS,
               "GroupNormalization attrs");

/* X [N, C, D1...] normalised per sample and group of C / num_groups
 * channels. Opset 21's scale and bias have one value per channel ([C]),
 * opset 18's one per group ([num_groups]); the node does not carry its
 * opset, but the shapes tell them apart (and where C == num_groups both
 * mean the same), so either is accepted. */
static int s_infer_groupnorm(gx_infer *ic)
{
    const char *op = "GroupNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X has rank %d; [N, C, ...] needed", op,
                             x->ndim);
    const int64_t c = x->shape[1], g = ic->attr[GX_GROUPNORM_NUM_GROUPS].i;
    if (g < 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: num_groups is %lld; it must be positive", op,
                             (long long)g);
    if (c % g != 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: num_groups %lld does not divide the %lld channels", op,
                             (long long)g, (long long)c);
    const int64_t stash = ic->attr[GX_GROUPNORM_STASH_TYPE].i;
    if (stash != 1 && stash != 11)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: stash_type %lld not supported (1 = float32 or 11 = float64)",
                             op, (long long)stash);
    for (int i = 1; i <= 2; i++) {
        const char *what = i == 1 ? "scale" : "bias";
        if ((rc = gx_infer_need_f32(ic, op, i)) < 0)
            return rc;
        const gx_view *v = &ic->in[i];
        if (v->ndim != 1 || (v->shape[0] != c && v->shape[0] != g)) {
            char sv[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: %s has shape %s, expected [%lld] (per channel, opset 21) "
                                 "or [%lld] (per group, opset 18)",
                                 op, what, gx_shape_str(v->ndim, v->shape, sv, sizeof sv),
                                 (long long)c, (long long)g);
        }
    }
    if (ic->in[1].shape[0] != ic->in[2].shape[0])
        return gx_infer_errf(ic, GX_ESHAPE, "%s: scale has %lld values but bias %lld", op,
                             (long long)ic->in[1].shape[0], (long long)ic->in[2].shape[0]);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_GROUPNORM = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_groupnorm_attrs, .n_attrs = GX_GROUPNORM_NATTRS,
    .infer = s_infer_groupnorm, .cost = s_cost_norm, .batch = gx_batch_samplewise,
};

/* ---- MeanVarianceNormalization ---- */

static const gx_attr_spec s_mvn_attrs[] = {
    [GX_MVN_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_mvn_attrs / sizeof s_mvn_attrs[0] == GX_MVN_NATTRS, "MVN attrs");

static int s_infer_mvn(gx_infer *ic)
{
    const char *op = "MeanVarianceNormalization";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    const gx_attrval *a = &ic->attr[GX_MVN_AXES];
    static const int64_t def_axes[] = {0, 2, 3};
    const int64_t *axes = a->set ? a->ints : def_axes;
    size_t n = a->set ? a->n : 3;
    bool seen[GX_MAX_DIMS] = {false};
    for (size_t i = 0; i < n; i++) {
        int d;
        if (!gx_axis_norm(axes[i], x->ndim, &d))
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                                 (long long)axes[i], x->ndim);
        if (seen[d])
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is given twice", op,
                                 (long long)axes[i]);
        seen[d] = true;
    }
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* The default axes [0, 2, 3] take statistics across the batch. */
const gx_op_schema gx_schema_MVN = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_mvn_attrs, .n_attrs = GX_MVN_NATTRS, .flags = GX_OPF_BATCH_COUPLED,
    .infer = s_infer_mvn, .cost = s_cost_norm,
};

/* ---- LRN ---- */

static const gx_attr_spec s_lrn_attrs[] = {
    [GX_LRN_ALPHA] = {.name = "alpha", .type = GX_ATTR_FLOAT, .def_f = 1e-4},
    [GX_LRN_BETA] = {.name = "beta", .type = GX_ATTR_FLOAT, .def_f = 0.75},
    [GX_LRN_BIAS] = {.name = "bias", .type = GX_ATTR_FLOAT, .def_f = 1.0},
    [GX_LRN_SIZE] = {.name = "size", .type = GX_ATTR_INT, .required = true},
};
_Static_assert(sizeof s_lrn_attrs / sizeof s_lrn_attrs[0] == GX_LRN_NATTRS, "LRN attrs");

static int s_infer_lrn(gx_infer *ic)
{
    int rc = gx_infer_need_f32(ic, "LRN", 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "LRN: input has rank %d; [N, C, ...] needed",
                             x->ndim);
    if (ic->attr[GX_LRN_SIZE].i < 1)
        return gx_infer_errf(ic, GX_EATTR, "LRN: size %lld is not positive",
                             (long long)ic->attr[GX_LRN_SIZE].i);
    gx_view_set(&ic->out[0], GX_F32, x->ndim, x->shape);
    return GX_OK;
}

/* size multiply-adds, then a pow (~20) and a multiply */
static gx_cost s_cost_lrn(const gx_infer *ic)
{
    return s_cost_per_elem(ic, 2.0 * (double)ic->attr[GX_LRN_SIZE].i + 21);
}

const gx_op_schema gx_schema_LRN = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_lrn_attrs, .n_attrs = GX_LRN_NATTRS,
    .infer = s_infer_lrn, .cost = s_cost_lrn, .batch = gx_batch_samplewise,
};

/* ---- Dropout ---- */

static const gx_attr_spec s_dropout_attrs[] = {
    [GX_DROPOUT_RATIO] = {.name = "ratio", .type = GX_ATTR_FLOAT, .def_f = 0.5},
    [GX_DROPOUT_SEED] = {.name = "seed", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_dropout_attrs / sizeof s_dropout_attrs[0] == GX_DROPOUT_NATTRS,
               "Dropout attrs");

static bool s_is_float(gx_dtype dt)
{
    return dt == GX_F32 || dt == GX_F16 || dt == GX_BF16 || dt == GX_F64;
}

/* Inference copies data (and the mask is all true). Training with a
 * non-zero ratio drops elements at random (ops/cpu/random.c: with the seed
 * attribute the same ones in every run); the ratio, in [0, 1), is the
 * ratio input (12+), else the attribute (before 12). */
static int s_infer_dropout(gx_infer *ic)
{
    const char *op = "Dropout";
    int rc = gx_infer_need(ic, op, 0);
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (!s_is_float(x->dtype))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: data is %s, expected a float type", op,
                             s_dtname(x->dtype));
    bool has_ratio = ic->n_in > 1 && ic->in[1].ndim >= 0;
    bool has_training = ic->n_in > 2 && ic->in[2].ndim >= 0;
    if (has_ratio && (!s_is_float(ic->in[1].dtype) || ic->in[1].numel != 1))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: ratio must be a float scalar", op);
    if (has_training && (ic->in[2].dtype != GX_BOOL || ic->in[2].numel != 1))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: training_mode must be a bool scalar", op);
    if (has_training) {
        const bool *t = gx_infer_value(ic, 2);
        if (!t)
            return GX_INFER_DYNAMIC;
        double ratio = ic->attr[GX_DROPOUT_RATIO].f;
        if (*t && has_ratio) {
            if (!gx_infer_value(ic, 1))
                return GX_INFER_DYNAMIC;
            ratio = gx_dropout_ratio(ic->in, ic->n_in, ic->attr);
        }
        if (*t && !(ratio >= 0 && ratio < 1))
            return gx_infer_errf(ic, GX_EATTR, "%s: ratio %g is outside [0, 1)", op, ratio);
    }
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_BOOL, x->ndim, x->shape);
    return GX_OK;
}

double gx_dropout_ratio(const gx_view *in, int n_in, const gx_attrval *attr)
{
    return n_in > 1 && in[1].ndim >= 0 ? gx_cpu_load_f64(in[1].data, in[1].dtype, 0)
                                       : attr[GX_DROPOUT_RATIO].f;
}

bool gx_dropout_draws(const gx_view *in, int n_in, const gx_attrval *attr)
{
    return n_in > 2 && in[2].ndim >= 0 && in[2].data && *(const bool *)in[2].data &&
           (in[1].ndim < 0 || in[1].data) && gx_dropout_ratio(in, n_in, attr) != 0;
}

/* Samples apart, but for the random form: its draws follow the element's
 * index in the whole tensor, which a slice of the batch would move. With a
 * training_mode whose value (or ratio's) the rule is not shown, it may be
 * that form. */
static bool s_batch_dropout(const gx_batch_ctx *bc)
{
    const bool training = bc->n_in > 2 && bc->in[2].ndim >= 0;
    const bool known = training && bc->in[2].data && (bc->in[1].ndim < 0 || bc->in[1].data);
    if (training && (!known || gx_dropout_draws(bc->in, bc->n_in, bc->attr)))
        return false;
    return gx_batch_samplewise(bc);
}

static gx_cost s_cost_dropout(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_DROPOUT = {
    .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 2,
    .attrs = s_dropout_attrs, .n_attrs = GX_DROPOUT_NATTRS,
    .flags = GX_OPF_NO_FOLD, /* the random form draws at every run */
    .value_inputs = 1u << 1 | 1u << 2, .infer = s_infer_dropout, .cost = s_cost_dropout,
    .batch = s_batch_dropout,
};
