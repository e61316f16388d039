/* Schemas of the vision family (GX_OPS_VISION in ops/op.h): GridSample,
 * RoiAlign and MaxRoiPool, float32 over 4-D [N, C, H, W] images, and
 * AffineGrid (opset 20, float32, 2-D and 3-D grids). */
#include <string.h>

#include "ops/schema.h"

static bool s_one_of(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

/* ---- GridSample ---- */

static const gx_attr_spec s_gridsample_attrs[] = {
    [GX_GRIDSAMPLE_ALIGN_CORNERS] = {.name = "align_corners", .type = GX_ATTR_INT},
    [GX_GRIDSAMPLE_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "bilinear"},
    [GX_GRIDSAMPLE_PADDING_MODE] = {.name = "padding_mode", .type = GX_ATTR_STRING,
                                    .def_s = "zeros"},
};
_Static_assert(sizeof s_gridsample_attrs / sizeof s_gridsample_attrs[0] == GX_GRIDSAMPLE_NATTRS,
               "GridSample attrs");

static int s_infer_gridsample(gx_infer *ic)
{
    const char *op = "GridSample";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc == GX_OK)
        rc = gx_infer_need_f32(ic, op, 1);
    if (rc < 0)
        return rc;
    /* opset 20 renamed bilinear and bicubic to linear and cubic */
    static const char *const modes[] = {"bilinear", "nearest", "bicubic", "linear", "cubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const char *mode = ic->attr[GX_GRIDSAMPLE_MODE].s;
    const char *pad = ic->attr[GX_GRIDSAMPLE_PADDING_MODE].s;
    int64_t align = ic->attr[GX_GRIDSAMPLE_ALIGN_CORNERS].i;
    if (!s_one_of(mode, modes, 5))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: mode \"%s\" is not bilinear, nearest or bicubic", op, mode);
    if (!s_one_of(pad, pads, 3))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: padding_mode \"%s\" is not zeros, border or reflection", op,
                             pad);
    if (align != 0 && align != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: align_corners %lld is not 0 or 1", op,
                             (long long)align);
    const gx_view *x = &ic->in[0], *g = &ic->in[1];
    if (x->ndim != 4)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: input has rank %d; only 4-D [N, C, H, W] is supported", op,
                             x->ndim);
    if (g->ndim != 4 || g->shape[0] != x->shape[0] || g->shape[3] != 2)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: grid must be [N, H_out, W_out, 2] with N = %lld", op,
                             (long long)x->shape[0]);
    int64_t shape[4] = {x->shape[0], x->shape[1], g->shape[1], g->shape[2]};
    gx_view_set(&ic->out[0], GX_F32, 4, shape);
    return GX_OK;
}

/* per output element: the coordinate maths and 4 (16 for bicubic) taps */
static gx_cost s_cost_gridsample(const gx_infer *ic)
{
    double taps = strcmp(ic->attr[GX_GRIDSAMPLE_MODE].s, "nearest") == 0 ? 1 : 4;
    if (strstr(ic->attr[GX_GRIDSAMPLE_MODE].s, "cubic"))
        taps = 16;
    return (gx_cost){.flops = (10 + 2 * taps) * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_GRIDSAMPLE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_gridsample_attrs, .n_attrs = GX_GRIDSAMPLE_NATTRS,
    .infer = s_infer_gridsample, .cost = s_cost_gridsample,
};

/* ---- RoiAlign ---- */

static const gx_attr_spec s_roialign_attrs[] = {
    [GX_ROIALIGN_COORD_MODE] = {.name = "coordinate_transformation_mode",
                                .type = GX_ATTR_STRING, .def_s = "half_pixel"},
    [GX_ROIALIGN_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .def_s = "avg"},
    [GX_ROIALIGN_OUTPUT_HEIGHT] = {.name = "output_height", .type = GX_ATTR_INT, .def_i = 1},
    [GX_ROIALIGN_OUTPUT_WIDTH] = {.name = "output_width", .type = GX_ATTR_INT, .def_i = 1},
    [GX_ROIALIGN_SAMPLING_RATIO] = {.name = "sampling_ratio", .type = GX_ATTR_INT},
    [GX_ROIALIGN_SPATIAL_SCALE] = {.name = "spatial_scale", .type = GX_ATTR_FLOAT, .def_f = 1.0},
};
_Static_assert(sizeof s_roialign_attrs / sizeof s_roialign_attrs[0] == GX_ROIALIGN_NATTRS,
               "RoiAlign attrs");

/* Batch indices are not value inputs (they do not shape the output): when
 * known, infer refuses out-of-range ones; otherwise the kernel writes zeros
 * for such a RoI rather than read outside the image. */
static int s_infer_roialign(gx_infer *ic)
{
    const char *op = "RoiAlign";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc == GX_OK)
        rc = gx_infer_need_f32(ic, op, 1);
    if (rc == GX_OK)
        rc = gx_infer_need(ic, op, 2);
    if (rc < 0)
        return rc;
    const gx_attrval *a = ic->attr;
    static const char *const coords[] = {"half_pixel", "output_half_pixel"};
    static const char *const modes[] = {"avg", "max"};
    if (!s_one_of(a[GX_ROIALIGN_COORD_MODE].s, coords, 2))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: coordinate_transformation_mode \"%s\" is not half_pixel or "
                             "output_half_pixel",
                             op, a[GX_ROIALIGN_COORD_MODE].s);
    if (!s_one_of(a[GX_ROIALIGN_MODE].s, modes, 2))
        return gx_infer_errf(ic, GX_EATTR, "%s: mode \"%s\" is not avg or max", op,
                             a[GX_ROIALIGN_MODE].s);
    int64_t oh = a[GX_ROIALIGN_OUTPUT_HEIGHT].i, ow = a[GX_ROIALIGN_OUTPUT_WIDTH].i;
    if (oh < 1 || ow < 1)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: output_height %lld and output_width %lld must be positive", op,
                             (long long)oh, (long long)ow);
    if (a[GX_ROIALIGN_SAMPLING_RATIO].i < 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: sampling_ratio %lld is negative", op,
                             (long long)a[GX_ROIALIGN_SAMPLING_RATIO].i);
    const gx_view *x = &ic->in[0], *rois = &ic->in[1], *bi = &ic->in[2];
    if (x->ndim != 4)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C, H, W] needed", op,
                             x->ndim);
    if (rois->ndim != 2 || rois->shape[1] != 4)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: rois must be [num_rois, 4]", op);
    if (bi->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: batch_indices must be int64", op);
    if (bi->ndim != 1 || bi->shape[0] != rois->shape[0])
        return gx_infer_errf(ic, GX_ESHAPE, "%s: batch_indices must be [num_rois] = [%lld]", op,
                             (long long)rois->shape[0]);
    const int64_t *b = bi->data;
    for (int64_t i = 0; b && i < bi->shape[0]; i++)
        if (b[i] < 0 || b[i] >= x->shape[0])
            return gx_infer_errf(ic, GX_EINVAL,
                                 "%s: batch index %lld is out of range for a batch of %lld", op,
                                 (long long)b[i], (long long)x->shape[0]);
    int64_t shape[4] = {rois->shape[0], x->shape[1], oh, ow};
    gx_view_set(&ic->out[0], GX_F32, 4, shape);
    return GX_OK;
}

/* per output element: its bin's samples, 4 taps each; an unset
 * sampling_ratio adapts to the RoI size, guessed as 2 x 2 here */
static gx_cost s_cost_roialign(const gx_infer *ic)
{
    int64_t sr = ic->attr[GX_ROIALIGN_SAMPLING_RATIO].i;
    double samples = sr > 0 ? (double)(sr * sr) : 4;
    return (gx_cost){.flops = 10 * samples * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_ROIALIGN = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_roialign_attrs, .n_attrs = GX_ROIALIGN_NATTRS,
    .infer = s_infer_roialign, .cost = s_cost_roialign,
};

/* ---- MaxRoiPool ---- */

static const gx_attr_spec s_maxroipool_attrs[] = {
    [GX_MAXROIPOOL_POOLED_SHAPE] = {.name = "pooled_shape", .type = GX_ATTR_INTS,
                                    .required = true},
    [GX_MAXROIPOOL_SPATIAL_SCALE] = {.name = "spatial_scale", .type = GX_ATTR_FLOAT,
                                     .def_f = 1.0},
};
_Static_assert(sizeof s_maxroipool_attrs / sizeof s_maxroipool_attrs[0] == GX_MAXROIPOOL_NATTRS,
               "MaxRoiPool attrs");

/* The batch index is rois[r][0] (a float): refused when known and out of
 * range; otherwise the kernel writes zeros for such a RoI. */
static int s_infer_maxroipool(gx_infer *ic)
{
    const char *op = "MaxRoiPool";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc == GX_OK)
        rc = gx_infer_need_f32(ic, op, 1);
    if (rc < 0)
        return rc;
    const gx_attrval *ps = &ic->attr[GX_MAXROIPOOL_POOLED_SHAPE];
    if (ps->n != 2 || ps->ints[0] < 1 || ps->ints[1] < 1)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: pooled_shape must be two positive ints [height, width]", op);
    const gx_view *x = &ic->in[0], *rois = &ic->in[1];
    if (x->ndim != 4)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has rank %d; [N, C, H, W] needed", op,
                             x->ndim);
    if (rois->ndim != 2 || rois->shape[1] != 5)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: rois must be [num_rois, 5]", op);
    const float *r = rois->data;
    for (int64_t i = 0; r && i < rois->shape[0]; i++)
        if (!(r[5 * i] >= 0 && r[5 * i] < (float)x->shape[0]))
            return gx_infer_errf(ic, GX_EINVAL,
                                 "%s: batch index %g is out of range for a batch of %lld", op,
                                 (double)r[5 * i], (long long)x->shape[0]);
    int64_t shape[4] = {rois->shape[0], x->shape[1], ps->ints[0], ps->ints[1]};
    gx_view_set(&ic->out[0], GX_F32, 4, shape);
    return GX_OK;
}

/* per output element: a comparison per pixel of its bin, guessed as 4 */
static gx_cost s_cost_maxroipool(const gx_infer *ic)
{
    return (gx_cost){.flops = 4 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_MAXROIPOOL = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_maxroipool_attrs, .n_attrs = GX_MAXROIPOOL_NATTRS,
    .infer = s_infer_maxroipool, .cost = s_cost_maxroipool,
};

/* ---- AffineGrid (opset 20) ---- */

static const gx_attr_spec s_affine_grid_attrs[] = {
    [GX_AFFINE_GRID_ALIGN_CORNERS] = {.name = "align_corners", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_affine_grid_attrs / sizeof s_affine_grid_attrs[0] ==
                   GX_AFFINE_GRID_NATTRS,
               "AffineGrid attrs");

/* theta [N, 2, 3] with size [N, C, H, W] gives a grid [N, H, W, 2]; theta
 * [N, 3, 4] with size [N, C, D, H, W] a grid [N, D, H, W, 3]. size (int64)
 * must be known. */
static int s_infer_affine_grid(gx_infer *ic)
{
    const char *op = "AffineGrid";
    int rc = gx_infer_need_f32(ic, op, 0);
    if (rc == GX_OK)
        rc = gx_infer_need(ic, op, 1);
    if (rc < 0)
        return rc;
    const gx_view *t = &ic->in[0], *sz = &ic->in[1];
    const int64_t align = ic->attr[GX_AFFINE_GRID_ALIGN_CORNERS].i;
    char s[GX_SHAPE_STRLEN];
    if (align != 0 && align != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: align_corners is %lld, expected 0 or 1", op,
                             (long long)align);
    if (sz->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: size is %s, expected int64", op,
                             gx_dtype_name(sz->dtype) ? gx_dtype_name(sz->dtype) : "unknown");
    if (sz->ndim != 1 || (sz->shape[0] != 4 && sz->shape[0] != 5))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: size has shape %s, expected [4] (N, C, H, W) "
                             "or [5] (N, C, D, H, W)", op,
                             gx_shape_str(sz->ndim, sz->shape, s, sizeof s));
    const int sd = (int)sz->shape[0] - 2; /* spatial dims */
    if (t->ndim != 3 || t->shape[1] != sd || t->shape[2] != sd + 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: theta has shape %s, expected [N, %d, %d] for a "
                             "size of %d values", op, gx_shape_str(t->ndim, t->shape, s, sizeof s),
                             sd, sd + 1, sd + 2);
    const int64_t *v = gx_infer_value(ic, 1);
    if (!v)
        return GX_INFER_DYNAMIC;
    if (v[0] != t->shape[0])
        return gx_infer_errf(ic, GX_ESHAPE, "%s: size[0] is %lld but theta holds %lld matrices",
                             op, (long long)v[0], (long long)t->shape[0]);
    int64_t shape[5] = {v[0]};
    for (int d = 0; d < sd; d++) {
        if (v[2 + d] < 1)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: size[%d] is %lld; spatial sizes must be "
                                 "positive", op, 2 + d, (long long)v[2 + d]);
        shape[1 + d] = v[2 + d];
    }
    shape[1 + sd] = sd;
    if (gx_shape_numel(sd + 2, shape, INT64_MAX / 8) < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: the grid is too large", op);
    gx_view_set(&ic->out[0], GX_F32, sd + 2, shape);
    return GX_OK;
}

/* a small matrix-vector product per grid point */
static gx_cost s_cost_affine_grid(const gx_infer *ic)
{
    return (gx_cost){.flops = 4 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* No batch rule: size (a value the plan is made for) names the batch. */
const gx_op_schema gx_schema_AFFINE_GRID = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_affine_grid_attrs, .n_attrs = GX_AFFINE_GRID_NATTRS, .value_inputs = 1u << 1,
    .infer = s_infer_affine_grid, .cost = s_cost_affine_grid,
};
