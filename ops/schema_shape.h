/*
 * What the shape family's schemas (ops/schema_shape.c) and kernels
 * (ops/cpu/shape.c, ops/cpu/gather.c) both need: reading index tensors,
 * Slice's resolved starts and steps, and the scatter reductions. Kernels
 * call these again with the values infer already accepted, so for them
 * nothing here can fail.
 */
#ifndef GX_OPS_SCHEMA_SHAPE_H
#define GX_OPS_SCHEMA_SHAPE_H

#include "ops/schema.h"

/* Element i of an int32 or int64 tensor (the index dtypes of ONNX). */
static inline int64_t gx_index_at(const gx_view *v, int64_t i)
{
    return v->dtype == GX_I32 ? ((const int32_t *)v->data)[i] : ((const int64_t *)v->data)[i];
}

/* Where a Slice reads: output dim d takes count[d] elements of input dim d
 * from start[d] on, step[d] apart (step may be negative). Dims not sliced
 * have start 0, step 1 and count the input's dim. */
typedef struct gx_slice_plan {
    int64_t start[GX_MAX_DIMS];
    int64_t step[GX_MAX_DIMS];
    int64_t count[GX_MAX_DIMS];
} gx_slice_plan;

/* Resolves Slice's starts, ends, axes and steps (inputs 1..4 of opset 10+,
 * or the starts/ends/axes attributes of opset 1) against the data input's
 * shape, clamping as the spec says. GX_OK, GX_INFER_DYNAMIC when an input
 * value is not known yet, or an error with a message in ic->err. */
int gx_slice_resolve(gx_infer *ic, gx_slice_plan *plan);

/* Shape's dims [*lo, *hi) of a rank: start and end (opset 15) count from
 * the end when negative and are clamped into [0, rank]. */
static inline void gx_shape_range(const gx_attrval *attr, int rank, int64_t *lo, int64_t *hi)
{
    int64_t s = attr[GX_SHAPE_START].i;
    int64_t e = attr[GX_SHAPE_END].set ? attr[GX_SHAPE_END].i : rank;
    s = s < 0 ? s + rank : s;
    e = e < 0 ? e + rank : e;
    *lo = s < 0 ? 0 : s > rank ? rank : s;
    *hi = e < *lo ? *lo : e > rank ? rank : e;
}

/* How ScatterElements and ScatterND combine an update with what is there. */
typedef enum gx_scatter_red {
    GX_SCATTER_NONE,
    GX_SCATTER_ADD,
    GX_SCATTER_MUL,
    GX_SCATTER_MAX,
    GX_SCATTER_MIN
} gx_scatter_red;

/* The reduction named by s ("none", "add", "mul", "max", "min"); false for
 * any other name. */
bool gx_scatter_red_parse(const char *s, gx_scatter_red *red);

#endif
