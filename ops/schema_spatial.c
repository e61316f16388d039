/* Schemas of the nn family's spatial ops: Resize (opsets 10-19) and
 * Upsample (7-9) with their shared parameter setup, Pad (2-19, any dtype),
 * CenterCropPad (18, any dtype), DepthToSpace and SpaceToDepth (any
 * dtype). */
#include <math.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/cpu/cpu.h" /* f16/bf16 conversions for Pad's old value attribute */
#include "ops/nn.h"

static const char *s_dtname(gx_dtype dt)
{
    const char *n = gx_dtype_name(dt);
    return n ? n : "unknown dtype";
}

/* Index of the string attribute a in names[0..n), or an error naming the
 * choices. */
static int s_pick(gx_infer *ic, const char *op, const char *attr, const gx_attrval *a,
                  const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(a->s, names[i]) == 0) {
            *out = i;
            return GX_OK;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    return gx_infer_errf(ic, GX_EATTR, "%s: %s '%s' is not one of %s", op, attr, a->s, list);
}

/* Input i is given and not empty (opset 11 Resize passes empty tensors for
 * the unused ones of roi/scales/sizes). */
static bool s_given(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0 && gx_view_numel(&ic->in[i]) > 0;
}

/* Input i is a 1-D tensor of n elements of dtype dt. */
static int s_need_1d(gx_infer *ic, const char *op, int i, const char *what, gx_dtype dt, int64_t n)
{
    const gx_view *v = &ic->in[i];
    if (v->dtype != dt)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s is %s, expected %s", op, what,
                             s_dtname(v->dtype), s_dtname(dt));
    if (v->ndim != 1 || v->shape[0] != n) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s has shape %s, expected [%lld]", op, what,
                             gx_shape_str(v->ndim, v->shape, s, sizeof s), (long long)n);
    }
    return GX_OK;
}

/* Normalises a list of n axes for rank into dims[], refusing repeats. */
static int s_axes(gx_infer *ic, const char *op, int rank, size_t n, const int64_t *axes,
                  int *dims)
{
    bool seen[GX_MAX_DIMS] = {false};
    if (n > (size_t)rank)
        return gx_infer_errf(ic, GX_EATTR, "%s: %zu axes for rank %d", op, n, rank);
    for (size_t i = 0; i < n; i++) {
        if (!gx_axis_norm(axes[i], rank, &dims[i]))
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is out of range for rank %d", op,
                                 (long long)axes[i], rank);
        if (seen[dims[i]])
            return gx_infer_errf(ic, GX_EATTR, "%s: axis %lld is given twice", op,
                                 (long long)axes[i]);
        seen[dims[i]] = true;
    }
    return GX_OK;
}

/* ---- Resize and Upsample ---- */

static const gx_attr_spec s_resize_attrs[] = {
    [GX_RESIZE_ANTIALIAS] = {.name = "antialias", .type = GX_ATTR_INT},
    [GX_RESIZE_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
    [GX_RESIZE_COORD_MODE] = {.name = "coordinate_transformation_mode", .type = GX_ATTR_STRING,
                              .def_s = "half_pixel"},
    [GX_RESIZE_CUBIC_COEFF_A] = {.name = "cubic_coeff_a", .type = GX_ATTR_FLOAT, .def_f = -0.75},
    [GX_RESIZE_EXCLUDE_OUTSIDE] = {.name = "exclude_outside", .type = GX_ATTR_INT},
    [GX_RESIZE_EXTRAPOLATION_VALUE] = {.name = "extrapolation_value", .type = GX_ATTR_FLOAT},
    [GX_RESIZE_KEEP_ASPECT_RATIO_POLICY] = {.name = "keep_aspect_ratio_policy",
                                            .type = GX_ATTR_STRING, .def_s = "stretch"},
    [GX_RESIZE_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "nearest"},
    [GX_RESIZE_NEAREST_MODE] = {.name = "nearest_mode", .type = GX_ATTR_STRING,
                                .def_s = "round_prefer_floor"},
};
_Static_assert(sizeof s_resize_attrs / sizeof s_resize_attrs[0] == GX_RESIZE_NATTRS,
               "Resize attrs");

static const gx_attr_spec s_upsample_attrs[] = {
    [GX_UPSAMPLE_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "nearest"},
    [GX_UPSAMPLE_SCALES] = {.name = "scales", .type = GX_ATTR_FLOATS},
};
_Static_assert(sizeof s_upsample_attrs / sizeof s_upsample_attrs[0] == GX_UPSAMPLE_NATTRS,
               "Upsample attrs");

static const char *const s_interp_names[] = {"nearest", "linear", "cubic"};
static const char *const s_coord_names[] = {
    [GX_COORD_HALF_PIXEL] = "half_pixel",
    [GX_COORD_HALF_PIXEL_SYMMETRIC] = "half_pixel_symmetric",
    [GX_COORD_PYTORCH_HALF_PIXEL] = "pytorch_half_pixel",
    [GX_COORD_ALIGN_CORNERS] = "align_corners",
    [GX_COORD_ASYMMETRIC] = "asymmetric",
    [GX_COORD_TF_HALF_PIXEL_FOR_NN] = "tf_half_pixel_for_nn",
    [GX_COORD_TF_CROP_AND_RESIZE] = "tf_crop_and_resize",
};
static const char *const s_nearest_names[] = {
    [GX_NEAREST_ROUND_PREFER_FLOOR] = "round_prefer_floor",
    [GX_NEAREST_ROUND_PREFER_CEIL] = "round_prefer_ceil",
    [GX_NEAREST_FLOOR] = "floor",
    [GX_NEAREST_CEIL] = "ceil",
};
enum { S_STRETCH, S_NOT_LARGER, S_NOT_SMALLER };
static const char *const s_aspect_names[] = {
    [S_STRETCH] = "stretch", [S_NOT_LARGER] = "not_larger", [S_NOT_SMALLER] = "not_smaller"};

#define S_NAMES(a) (a), (int)(sizeof(a) / sizeof((a)[0]))

/* A resized dim: floor(in * scale) as the reference's astype(int) of a
 * float64 product; false when it does not fit. */
static bool s_scaled_dim(int64_t in, double scale, int64_t *out)
{
    double v = scale * (double)in;
    if (!(v < 9.0e18))
        return false;
    *out = (int64_t)v;
    return true;
}

/* The attributes of the opset 11+ Resize. */
static int s_resize_attrs_11(gx_infer *ic, gx_resize *r)
{
    const char *op = "Resize";
    const gx_attrval *a = ic->attr;
    int v, rc;
    if (a[GX_RESIZE_ANTIALIAS].i != 0)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: antialias=%lld is not supported", op,
                             (long long)a[GX_RESIZE_ANTIALIAS].i);
    if ((rc = s_pick(ic, op, "coordinate_transformation_mode", &a[GX_RESIZE_COORD_MODE],
                     S_NAMES(s_coord_names), &v)) < 0)
        return rc;
    r->coord = (gx_coord)v;
    if ((rc = s_pick(ic, op, "nearest_mode", &a[GX_RESIZE_NEAREST_MODE], S_NAMES(s_nearest_names),
                     &v)) < 0)
        return rc;
    r->nearest = (gx_nearest)v;
    int64_t ex = a[GX_RESIZE_EXCLUDE_OUTSIDE].i;
    if (ex != 0 && ex != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: exclude_outside %lld is not 0 or 1", op,
                             (long long)ex);
    r->exclude_outside = ex != 0;
    r->cubic_a = a[GX_RESIZE_CUBIC_COEFF_A].f;
    r->extrapolation = (float)a[GX_RESIZE_EXTRAPOLATION_VALUE].f;
    return GX_OK;
}

/* Opset 11+: roi (input 1), scales (2) or sizes (3), for the dims in
 * axes (all by default), with keep_aspect_ratio_policy for sizes. */
static int s_resize_targets_11(gx_infer *ic, gx_resize *r)
{
    const char *op = "Resize";
    const gx_attrval *ax = &ic->attr[GX_RESIZE_AXES];
    int dims[GX_MAX_DIMS], n = r->ndim, rc, v;
    if (ax->set) {
        if ((rc = s_axes(ic, op, r->ndim, ax->n, ax->ints, dims)) < 0)
            return rc;
        n = (int)ax->n;
    } else {
        for (int i = 0; i < n; i++)
            dims[i] = i;
    }
    bool has_scales = s_given(ic, 2), has_sizes = s_given(ic, 3);
    if (has_scales == has_sizes)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: exactly one of scales and sizes must be given",
                             op);
    if (r->coord == GX_COORD_TF_CROP_AND_RESIZE) {
        if (!s_given(ic, 1))
            return gx_infer_errf(ic, GX_ESHAPE, "%s: tf_crop_and_resize needs roi", op);
        if (ic->in[0].dtype != GX_F32)
            return gx_infer_errf(ic, GX_EDTYPE,
                                 "%s: tf_crop_and_resize on %s not supported (float32 only)", op,
                                 s_dtname(ic->in[0].dtype));
        if ((rc = s_need_1d(ic, op, 1, "roi", GX_F32, 2 * (int64_t)n)) < 0)
            return rc;
        const float *roi = gx_infer_value(ic, 1);
        if (!roi)
            return GX_INFER_DYNAMIC;
        for (int i = 0; i < n; i++) {
            if (!isfinite(roi[i]) || !isfinite(roi[n + i]))
                return gx_infer_errf(ic, GX_ESHAPE, "%s: roi holds a non-finite value", op);
            r->roi_lo[dims[i]] = roi[i];
            r->roi_hi[dims[i]] = roi[n + i];
        }
    }
    if (has_scales) {
        if ((rc = s_need_1d(ic, op, 2, "scales", GX_F32, n)) < 0)
            return rc;
        const float *sc = gx_infer_value(ic, 2);
        if (!sc)
            return GX_INFER_DYNAMIC;
        for (int i = 0; i < n; i++) {
            int d = dims[i];
            if (!(sc[i] > 0) || !s_scaled_dim(r->in[d], sc[i], &r->out[d]))
                return gx_infer_errf(ic, GX_ESHAPE, "%s: scale %g for dim %d is not usable", op,
                                     (double)sc[i], d);
            r->scale[d] = sc[i];
        }
        return GX_OK;
    }
    if ((rc = s_need_1d(ic, op, 3, "sizes", GX_I64, n)) < 0)
        return rc;
    const int64_t *sz = gx_infer_value(ic, 3);
    if (!sz)
        return GX_INFER_DYNAMIC;
    const gx_attrval *policy = &ic->attr[GX_RESIZE_KEEP_ASPECT_RATIO_POLICY];
    if ((rc = s_pick(ic, op, "keep_aspect_ratio_policy", policy, S_NAMES(s_aspect_names), &v)) < 0)
        return rc;
    /* not_larger keeps the least of the ratios for every dim, not_smaller the largest */
    double keep = v == S_NOT_LARGER ? INFINITY : 0;
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        if (sz[i] < 1 || r->in[d] < 1)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: cannot resize dim %d from %lld to %lld", op,
                                 d, (long long)r->in[d], (long long)sz[i]);
        r->out[d] = sz[i];
        r->scale[d] = (double)sz[i] / (double)r->in[d];
        if (v == S_NOT_LARGER && r->scale[d] < keep)
            keep = r->scale[d];
        if (v == S_NOT_SMALLER && r->scale[d] > keep)
            keep = r->scale[d];
    }
    for (int i = 0; v != S_STRETCH && i < n; i++) {
        /* the reference rounds half up: int(x + 0.5) */
        int d = dims[i];
        r->scale[d] = keep;
        if (!s_scaled_dim(1, keep * (double)r->in[d] + 0.5, &r->out[d]))
            return gx_infer_errf(ic, GX_ESHAPE, "%s: dim %d does not fit", op, d);
    }
    return GX_OK;
}

/* Upsample and opset-10 Resize: scales for every dim, from input 1 or
 * (opset-7 Upsample) the scales attribute. */
static int s_resize_targets_10(gx_infer *ic, gx_op op, gx_resize *r)
{
    const char *name = gx_op_name(op);
    const float *sc = NULL;
    const double *asc = NULL;
    int rc;
    if (ic->n_in > 1) {
        if (op == GX_OP_UPSAMPLE && ic->attr[GX_UPSAMPLE_SCALES].set)
            return gx_infer_errf(ic, GX_EATTR, "%s: scales given both as input and attribute",
                                 name);
        if ((rc = gx_infer_need(ic, name, 1)) < 0 ||
            (rc = s_need_1d(ic, name, 1, "scales", GX_F32, r->ndim)) < 0)
            return rc;
        if (!(sc = gx_infer_value(ic, 1)))
            return GX_INFER_DYNAMIC;
    } else {
        const gx_attrval *a = &ic->attr[GX_UPSAMPLE_SCALES];
        if (op != GX_OP_UPSAMPLE || !a->set)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: scales are missing", name);
        if (a->n != (size_t)r->ndim)
            return gx_infer_errf(ic, GX_EATTR, "%s: %zu scales for rank %d", name, a->n,
                                 r->ndim);
        asc = a->floats;
    }
    for (int d = 0; d < r->ndim; d++) {
        double s = sc ? sc[d] : (double)(float)asc[d];
        if (!(s > 0) || !s_scaled_dim(r->in[d], s, &r->out[d]))
            return gx_infer_errf(ic, GX_ESHAPE, "%s: scale %g for dim %d is not usable", name, s,
                                 d);
        r->scale[d] = s;
    }
    return GX_OK;
}

int gx_resize_setup(gx_infer *ic, gx_op op, gx_resize *r)
{
    const char *name = gx_op_name(op);
    /* Resize with just X and scales is the opset-10 form; from opset 11
     * input 1 is roi and scales or sizes follow it */
    const bool v10 = op == GX_OP_UPSAMPLE || ic->n_in == 2;
    int rc = gx_infer_need(ic, name, 0), v;
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input is a scalar; rank >= 1 needed", name);
    *r = (gx_resize){.coord = GX_COORD_ASYMMETRIC, .nearest = GX_NEAREST_SIMPLE, .ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        r->in[d] = r->out[d] = x->shape[d];
        r->scale[d] = 1;
        r->roi_hi[d] = 1;
    }
    const gx_attrval *mode = &ic->attr[op == GX_OP_UPSAMPLE ? GX_UPSAMPLE_MODE : GX_RESIZE_MODE];
    if ((rc = s_pick(ic, name, "mode", mode, s_interp_names, v10 ? 2 : 3, &v)) < 0)
        return rc;
    r->mode = (gx_interp)v;
    if (r->mode != GX_INTERP_NEAREST && x->dtype != GX_F32)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s mode on %s not supported (float32 only)",
                             name, mode->s, s_dtname(x->dtype));
    if (v10)
        rc = s_resize_targets_10(ic, op, r);
    else if ((rc = s_resize_attrs_11(ic, r)) == GX_OK)
        rc = s_resize_targets_11(ic, r);
    if (rc != GX_OK)
        return rc;
    if (gx_shape_numel(r->ndim, r->out, INT64_MAX / 8) < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the output is too large", name);
    return GX_OK;
}

static int s_infer_resize_op(gx_infer *ic, gx_op op)
{
    gx_resize r;
    int rc = gx_resize_setup(ic, op, &r);
    if (rc != GX_OK)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, r.ndim, r.out);
    return GX_OK;
}

static int s_infer_resize(gx_infer *ic)
{
    return s_infer_resize_op(ic, GX_OP_RESIZE);
}

static int s_infer_upsample(gx_infer *ic)
{
    return s_infer_resize_op(ic, GX_OP_UPSAMPLE);
}

/* Per output element: a gather for nearest, a few taps per resized dim
 * otherwise (the mode is not worth re-parsing here). */
static gx_cost s_cost_resize(const gx_infer *ic)
{
    return (gx_cost){.flops = 8.0 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_view_bytes(&ic->in[0]) + gx_view_bytes(&ic->out[0])};
}

/* Opset 10's scales (input 1), opset 11's roi, scales and sizes. */
const gx_op_schema gx_schema_RESIZE = {
    .min_in = 1, .max_in = 4, .min_out = 1, .max_out = 1,
    .attrs = s_resize_attrs, .n_attrs = GX_RESIZE_NATTRS,
    .value_inputs = 1u << 1 | 1u << 2 | 1u << 3, .infer = s_infer_resize, .cost = s_cost_resize,
};

const gx_op_schema gx_schema_UPSAMPLE = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_upsample_attrs, .n_attrs = GX_UPSAMPLE_NATTRS,
    .value_inputs = 1u << 1, .infer = s_infer_upsample, .cost = s_cost_resize,
};

/* ---- Pad ---- */

static const gx_attr_spec s_pad_attrs[] = {
    [GX_PAD_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "constant"},
    [GX_PAD_PADS] = {.name = "pads", .type = GX_ATTR_INTS},
    [GX_PAD_VALUE] = {.name = "value", .type = GX_ATTR_FLOAT},
};
_Static_assert(sizeof s_pad_attrs / sizeof s_pad_attrs[0] == GX_PAD_NATTRS, "Pad attrs");

static const char *const s_pad_mode_names[] = {
    [GX_PAD_CONSTANT] = "constant",
    [GX_PAD_REFLECT] = "reflect",
    [GX_PAD_EDGE] = "edge",
    [GX_PAD_WRAP] = "wrap",
};

/* v converted to dtype dt into out (opset 2-10's float `value`). */
static void s_store(gx_dtype dt, double v, unsigned char *out)
{
#define S_STORE(T, x)                                                         \
    do {                                                                      \
        T t_ = (x);                                                           \
        memcpy(out, &t_, sizeof t_);                                          \
    } while (0)
    switch (dt) {
    case GX_F32:
        S_STORE(float, (float)v);
        break;
    case GX_F64:
        S_STORE(double, v);
        break;
    case GX_F16:
        S_STORE(uint16_t, gx_f32_to_f16((float)v));
        break;
    case GX_BF16:
        S_STORE(uint16_t, gx_f32_to_bf16((float)v));
        break;
    case GX_I64:
        S_STORE(int64_t, (int64_t)v);
        break;
    case GX_I32:
        S_STORE(int32_t, (int32_t)v);
        break;
    case GX_I16:
        S_STORE(int16_t, (int16_t)v);
        break;
    case GX_I8:
        S_STORE(int8_t, (int8_t)v);
        break;
    case GX_U64:
        S_STORE(uint64_t, (uint64_t)v);
        break;
    case GX_U32:
        S_STORE(uint32_t, (uint32_t)v);
        break;
    case GX_U16:
        S_STORE(uint16_t, (uint16_t)v);
        break;
    case GX_U8:
        S_STORE(uint8_t, (uint8_t)v);
        break;
    case GX_BOOL:
        S_STORE(uint8_t, v != 0);
        break;
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
#undef S_STORE
}

/* Opset 11+: pads (input 1, int64), constant_value (2), axes (3). Fills
 * pads[0..2n) and dims[0..n). */
static int s_pad_inputs(gx_infer *ic, int rank, int64_t *pads, int *dims, int *n)
{
    const char *op = "Pad";
    int rc;
    if (ic->attr[GX_PAD_PADS].set || ic->attr[GX_PAD_VALUE].set)
        return gx_infer_errf(ic, GX_EATTR, "Pad: pads and value are inputs since opset 11, "
                                           "not attributes");
    if ((rc = gx_infer_need(ic, op, 1)) < 0)
        return rc;
    *n = rank;
    if (ic->n_in > 3 && ic->in[3].ndim >= 0) {
        const gx_view *a = &ic->in[3];
        if ((a->dtype != GX_I64 && a->dtype != GX_I32) || a->ndim != 1)
            return gx_infer_errf(ic, GX_ESHAPE, "Pad: axes must be a 1-D int32 or int64 tensor");
        const void *av = gx_infer_value(ic, 3);
        if (!av)
            return GX_INFER_DYNAMIC;
        int64_t axes[GX_MAX_DIMS];
        if (a->shape[0] > rank)
            return gx_infer_errf(ic, GX_EATTR, "Pad: %lld axes for rank %d",
                                 (long long)a->shape[0], rank);
        *n = (int)a->shape[0];
        for (int i = 0; i < *n; i++)
            axes[i] = a->dtype == GX_I64 ? ((const int64_t *)av)[i] : ((const int32_t *)av)[i];
        if ((rc = s_axes(ic, op, rank, (size_t)*n, axes, dims)) < 0)
            return rc;
    } else {
        for (int i = 0; i < rank; i++)
            dims[i] = i;
    }
    if ((rc = s_need_1d(ic, op, 1, "pads", GX_I64, 2 * (int64_t)*n)) < 0)
        return rc;
    const int64_t *pv = gx_infer_value(ic, 1);
    if (!pv)
        return GX_INFER_DYNAMIC;
    memcpy(pads, pv, (size_t)(2 * *n) * sizeof *pads);
    if (ic->n_in > 2 && ic->in[2].ndim >= 0) {
        const gx_view *c = &ic->in[2];
        if (c->dtype != ic->in[0].dtype)
            return gx_infer_errf(ic, GX_EDTYPE, "Pad: constant_value is %s but data is %s",
                                 s_dtname(c->dtype), s_dtname(ic->in[0].dtype));
        if (c->numel != 1)
            return gx_infer_errf(ic, GX_ESHAPE, "Pad: constant_value has %lld elements, not 1",
                                 (long long)c->numel);
    }
    return GX_OK;
}

int gx_pad_setup(gx_infer *ic, gx_pad *p)
{
    const char *op = "Pad";
    int rc = gx_infer_need(ic, op, 0), v;
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    *p = (gx_pad){.ndim = x->ndim};
    if ((rc = s_pick(ic, op, "mode", &ic->attr[GX_PAD_MODE], S_NAMES(s_pad_mode_names), &v)) < 0)
        return rc;
    p->mode = (gx_pad_mode)v;
    int64_t pads[2 * GX_MAX_DIMS];
    int dims[GX_MAX_DIMS], n = x->ndim;
    if (ic->n_in > 1) {
        if ((rc = s_pad_inputs(ic, x->ndim, pads, dims, &n)) != GX_OK)
            return rc;
        if (ic->n_in > 2 && ic->in[2].ndim >= 0 && ic->in[2].data)
            memcpy(p->value, ic->in[2].data, gx_dtype_size(x->dtype));
    } else {
        const gx_attrval *a = &ic->attr[GX_PAD_PADS];
        if (!a->set)
            return gx_infer_errf(ic, GX_ESHAPE, "Pad: pads are missing");
        if (x->dtype == GX_STRING) /* the float value attribute cannot be one */
            return gx_infer_errf(ic, GX_EDTYPE, "Pad: string data needs pads and "
                                                "constant_value as inputs (opset 11 or later)");
        if (a->n != 2 * (size_t)x->ndim)
            return gx_infer_errf(ic, GX_EATTR, "Pad: %zu pads for rank %d", a->n, x->ndim);
        memcpy(pads, a->ints, a->n * sizeof *pads);
        for (int i = 0; i < n; i++)
            dims[i] = i;
        s_store(x->dtype, ic->attr[GX_PAD_VALUE].f, p->value);
    }
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        p->begin[d] = pads[i];
        p->end[d] = pads[n + i];
    }
    for (int d = 0; d < x->ndim; d++) {
        int64_t b = p->begin[d], e = p->end[d], in = x->shape[d];
        /* the source left after cropping (negative pads), and the output */
        int64_t kept = in - (b < 0 ? -b : 0) - (e < 0 ? -e : 0);
        if (b > INT64_MAX / 4 || e > INT64_MAX / 4 || b < -in || e < -in || kept < 0)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "Pad: pads %lld, %lld do not fit dim %d of size %lld",
                                 (long long)b, (long long)e, d, (long long)in);
        if (p->mode != GX_PAD_CONSTANT && kept == 0 && (b > 0 || e > 0))
            return gx_infer_errf(ic, GX_ESHAPE, "Pad: %s mode cannot pad dim %d, which is empty",
                                 s_pad_mode_names[p->mode], d);
    }
    return GX_OK;
}

static int s_infer_pad(gx_infer *ic)
{
    gx_pad p;
    int rc = gx_pad_setup(ic, &p);
    if (rc != GX_OK)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->shape[d] + p.begin[d] + p.end[d];
    if (gx_shape_numel(x->ndim, shape, INT64_MAX / 8) < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "Pad: the output is too large");
    gx_view_set(&ic->out[0], x->dtype, x->ndim, shape);
    return GX_OK;
}

/* Moving bytes: read the output's worth and write it once. */
static gx_cost s_cost_move(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = 2.0 * gx_view_bytes(&ic->out[0])};
}

/* Separable when nothing is padded or cropped along axis 0. */
static bool s_batch_pad(const gx_batch_ctx *bc)
{
    char err[160];
    gx_pad p;
    gx_infer ic = {.attr = bc->attr, .n_in = bc->n_in, .in = bc->in, .err = err,
                   .errlen = sizeof err};
    return gx_batch_samplewise(bc) && gx_pad_setup(&ic, &p) == GX_OK && p.begin[0] == 0 &&
           p.end[0] == 0;
}

/* pads and axes fix the shape; constant_value is only read by the kernel */
const gx_op_schema gx_schema_PAD = {
    .min_in = 1, .max_in = 4, .min_out = 1, .max_out = 1,
    .attrs = s_pad_attrs, .n_attrs = GX_PAD_NATTRS, .flags = GX_OPF_SHAPE_ONLY | GX_OPF_STRINGS,
    .value_inputs = 1u << 1 | 1u << 3, .infer = s_infer_pad, .cost = s_cost_move,
    .batch = s_batch_pad,
};

/* ---- CenterCropPad (opset 18) ---- */

static const gx_attr_spec s_center_crop_pad_attrs[] = {
    [GX_CENTER_CROP_PAD_AXES] = {.name = "axes", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_center_crop_pad_attrs / sizeof s_center_crop_pad_attrs[0] ==
                   GX_CENTER_CROP_PAD_NATTRS,
               "CenterCropPad attrs");

/* The output shape: input_data's, with each of the axes (all dims when
 * the attribute is absent) set to its entry of shape (input 1, int32 or
 * int64, whose value must be known). The kernel centres the input in it
 * (ops/cpu/pad.c). */
static int s_center_crop_pad_shape(gx_infer *ic, int64_t *out)
{
    const char *op = "CenterCropPad";
    int rc;
    if ((rc = gx_infer_need(ic, op, 0)) < 0 || (rc = gx_infer_need(ic, op, 1)) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *sv = &ic->in[1];
    const gx_attrval *a = &ic->attr[GX_CENTER_CROP_PAD_AXES];
    int dims[GX_MAX_DIMS], n = x->ndim;
    if (a->set) {
        if ((rc = s_axes(ic, op, x->ndim, a->n, a->ints, dims)) < 0)
            return rc;
        n = (int)a->n;
    } else {
        for (int d = 0; d < x->ndim; d++)
            dims[d] = d;
    }
    if (sv->dtype != GX_I64 && sv->dtype != GX_I32)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: shape is %s, expected int32 or int64", op,
                             s_dtname(sv->dtype));
    if (sv->ndim != 1 || sv->shape[0] != n) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: shape has shape %s, expected [%d] (one per axis)",
                             op, gx_shape_str(sv->ndim, sv->shape, s, sizeof s), n);
    }
    const void *v = gx_infer_value(ic, 1);
    if (!v)
        return GX_INFER_DYNAMIC;
    memcpy(out, x->shape, (size_t)x->ndim * sizeof *out);
    for (int i = 0; i < n; i++) {
        const int64_t t = sv->dtype == GX_I64 ? ((const int64_t *)v)[i] : ((const int32_t *)v)[i];
        if (t < 0)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: target size %lld of axis %d is negative", op,
                                 (long long)t, dims[i]);
        out[dims[i]] = t;
    }
    if (gx_shape_numel(x->ndim, out, INT64_MAX / 8) < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the output is too large", op);
    return GX_OK;
}

static int s_infer_center_crop_pad(gx_infer *ic)
{
    int64_t shape[GX_MAX_DIMS];
    int rc = s_center_crop_pad_shape(ic, shape);
    if (rc != GX_OK)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[0].ndim, shape);
    return GX_OK;
}

/* Separable when axis 0 keeps its size. */
static bool s_batch_center_crop_pad(const gx_batch_ctx *bc)
{
    return gx_batch_samplewise(bc) && bc->out[0].ndim == bc->in[0].ndim &&
           bc->out[0].shape[0] == bc->in[0].shape[0];
}

const gx_op_schema gx_schema_CENTER_CROP_PAD = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_center_crop_pad_attrs, .n_attrs = GX_CENTER_CROP_PAD_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .value_inputs = 1u << 1, .infer = s_infer_center_crop_pad,
    .cost = s_cost_move, .batch = s_batch_center_crop_pad,
};

/* ---- DepthToSpace, SpaceToDepth ---- */

static const gx_attr_spec s_depthtospace_attrs[] = {
    [GX_DEPTHTOSPACE_BLOCKSIZE] = {.name = "blocksize", .type = GX_ATTR_INT, .required = true},
    [GX_DEPTHTOSPACE_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "DCR"},
};
_Static_assert(sizeof s_depthtospace_attrs / sizeof s_depthtospace_attrs[0] ==
                   GX_DEPTHTOSPACE_NATTRS,
               "DepthToSpace attrs");

static const gx_attr_spec s_spacetodepth_attrs[] = {
    [GX_SPACETODEPTH_BLOCKSIZE] = {.name = "blocksize", .type = GX_ATTR_INT, .required = true},
};
_Static_assert(sizeof s_spacetodepth_attrs / sizeof s_spacetodepth_attrs[0] ==
                   GX_SPACETODEPTH_NATTRS,
               "SpaceToDepth attrs");

/* [N, C, H, W] input and a positive blocksize b. */
static int s_need_nchw(gx_infer *ic, const char *op, int64_t b)
{
    int rc = gx_infer_need(ic, op, 0);
    if (rc < 0)
        return rc;
    if (ic->in[0].ndim != 4)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C, H, W] needed", op,
                             ic->in[0].ndim);
    if (b < 1 || b > (1 << 20))
        return gx_infer_errf(ic, GX_EATTR, "%s: blocksize %lld is out of range", op,
                             (long long)b);
    return GX_OK;
}

static int s_infer_depthtospace(gx_infer *ic)
{
    const char *op = "DepthToSpace";
    static const char *const modes[] = {"DCR", "CRD"};
    const int64_t b = ic->attr[GX_DEPTHTOSPACE_BLOCKSIZE].i;
    int rc = s_need_nchw(ic, op, b), v;
    if (rc < 0 ||
        (rc = s_pick(ic, op, "mode", &ic->attr[GX_DEPTHTOSPACE_MODE], S_NAMES(modes), &v)) < 0)
        return rc;
    const int64_t *s = ic->in[0].shape;
    if (s[1] % (b * b) != 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %lld channels are not a multiple of %lld", op,
                             (long long)s[1], (long long)(b * b));
    if (s[2] > INT64_MAX / 8 / b || s[3] > INT64_MAX / 8 / b)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the output is too large", op);
    int64_t shape[4] = {s[0], s[1] / (b * b), s[2] * b, s[3] * b};
    gx_view_set(&ic->out[0], ic->in[0].dtype, 4, shape);
    return GX_OK;
}

static int s_infer_spacetodepth(gx_infer *ic)
{
    const char *op = "SpaceToDepth";
    const int64_t b = ic->attr[GX_SPACETODEPTH_BLOCKSIZE].i;
    int rc = s_need_nchw(ic, op, b);
    if (rc < 0)
        return rc;
    const int64_t *s = ic->in[0].shape;
    if (s[2] % b != 0 || s[3] % b != 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: height %lld and width %lld are not multiples of "
                                            "%lld",
                             op, (long long)s[2], (long long)s[3], (long long)b);
    if (s[1] > INT64_MAX / 8 / (b * b))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the output is too large", op);
    int64_t shape[4] = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
    gx_view_set(&ic->out[0], ic->in[0].dtype, 4, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_DEPTHTOSPACE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_depthtospace_attrs, .n_attrs = GX_DEPTHTOSPACE_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_depthtospace, .cost = s_cost_move,
    .batch = gx_batch_samplewise,
};

const gx_op_schema gx_schema_SPACETODEPTH = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_spacetodepth_attrs, .n_attrs = GX_SPACETODEPTH_NATTRS,
    .flags = GX_OPF_SHAPE_ONLY, .infer = s_infer_spacetodepth, .cost = s_cost_move,
    .batch = gx_batch_samplewise,
};
