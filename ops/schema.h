/*
 * Inside the op library: the per-op schema objects that ops/schema.c lists,
 * the attribute positions shared by schemas and kernels, and the helpers that
 * every infer function uses. Not installed; include ops/op.h elsewhere.
 */
#ifndef GX_OPS_SCHEMA_H
#define GX_OPS_SCHEMA_H

#include "ops/op.h"

/* One schema object per op, gx_schema_ADD ... gx_schema_IDENTITY, defined in
 * ops/schema_*.c. ops/schema.c builds its table from GX_OP_LIST, so an op
 * without a schema is a link error. */
#define GX_SCHEMA_DECL(e, name) extern const gx_op_schema gx_schema_##e;
GX_OP_LIST(GX_SCHEMA_DECL)
#undef GX_SCHEMA_DECL

/* Attribute positions in gx_infer.attr / gx_kargs.attr, one block per op
 * family. The schemas' spec arrays are built with these as designated
 * indices, so they cannot drift. */

/* math */


/* logic */
enum { GX_ISINF_DETECT_NEGATIVE, GX_ISINF_DETECT_POSITIVE, GX_ISINF_NATTRS };
enum { GX_BIT_SHIFT_DIRECTION, GX_BIT_SHIFT_NATTRS };
enum { GX_CAST_TO, GX_CAST_SATURATE, GX_CAST_NATTRS };
enum { GX_CAST_LIKE_SATURATE, GX_CAST_LIKE_NATTRS };
enum { GX_CUMSUM_EXCLUSIVE, GX_CUMSUM_REVERSE, GX_CUMSUM_NATTRS };
enum { GX_TRILU_UPPER, GX_TRILU_NATTRS };
enum { GX_ONE_HOT_AXIS, GX_ONE_HOT_NATTRS };
enum { GX_EYE_LIKE_DTYPE, GX_EYE_LIKE_K, GX_EYE_LIKE_NATTRS };
enum { GX_COMPRESS_AXIS, GX_COMPRESS_NATTRS };


/* linalg */
enum { GX_GEMM_ALPHA, GX_GEMM_BETA, GX_GEMM_TRANSA, GX_GEMM_TRANSB, GX_GEMM_NATTRS };


/* reduce */


/* conv: the sliding-window ops (Conv, ConvInteger, ConvTranspose, MaxPool,
 * AveragePool, LpPool) start with the GX_WIN_ attributes, in this order,
 * so that one geometry helper (ops/conv.h) reads them for all. */
enum { GX_WIN_AUTO_PAD, GX_WIN_DILATIONS, GX_WIN_KERNEL_SHAPE, GX_WIN_PADS, GX_WIN_STRIDES,
       GX_WIN_NATTRS };
enum { GX_CONV_GROUP = GX_WIN_NATTRS, GX_CONV_NATTRS }; /* Conv and ConvInteger */
enum { GX_CONVTRANSPOSE_GROUP = GX_WIN_NATTRS, GX_CONVTRANSPOSE_OUTPUT_PADDING,
       GX_CONVTRANSPOSE_OUTPUT_SHAPE, GX_CONVTRANSPOSE_NATTRS };
enum { GX_MAXPOOL_CEIL_MODE = GX_WIN_NATTRS, GX_MAXPOOL_STORAGE_ORDER, GX_MAXPOOL_NATTRS };
enum { GX_AVERAGEPOOL_CEIL_MODE = GX_WIN_NATTRS, GX_AVERAGEPOOL_COUNT_INCLUDE_PAD,
       GX_AVERAGEPOOL_NATTRS };
enum { GX_LPPOOL_CEIL_MODE = GX_WIN_NATTRS, GX_LPPOOL_P, GX_LPPOOL_NATTRS };
enum { GX_GLOBALLPPOOL_P, GX_GLOBALLPPOOL_NATTRS };
enum { GX_MAXUNPOOL_KERNEL_SHAPE, GX_MAXUNPOOL_PADS, GX_MAXUNPOOL_STRIDES, GX_MAXUNPOOL_NATTRS };


/* nn (Softmax, LogSoftmax and Hardmax share the one axis attribute) */
enum { GX_SOFTMAX_AXIS, GX_SOFTMAX_NATTRS };
enum {
    GX_BATCHNORM_EPSILON,
    GX_BATCHNORM_MOMENTUM,
    GX_BATCHNORM_TRAINING_MODE,
    GX_BATCHNORM_SPATIAL,
    GX_BATCHNORM_NATTRS
};
enum { GX_LAYERNORM_AXIS, GX_LAYERNORM_EPSILON, GX_LAYERNORM_STASH_TYPE, GX_LAYERNORM_NATTRS };
enum { GX_INSTANCENORM_EPSILON, GX_INSTANCENORM_NATTRS };
enum { GX_MVN_AXES, GX_MVN_NATTRS };
enum { GX_LRN_ALPHA, GX_LRN_BETA, GX_LRN_BIAS, GX_LRN_SIZE, GX_LRN_NATTRS };
enum { GX_DROPOUT_RATIO, GX_DROPOUT_SEED, GX_DROPOUT_NATTRS };
enum {
    GX_RESIZE_ANTIALIAS,
    GX_RESIZE_AXES,
    GX_RESIZE_COORD_MODE,
    GX_RESIZE_CUBIC_COEFF_A,
    GX_RESIZE_EXCLUDE_OUTSIDE,
    GX_RESIZE_EXTRAPOLATION_VALUE,
    GX_RESIZE_KEEP_ASPECT_RATIO_POLICY,
    GX_RESIZE_MODE,
    GX_RESIZE_NEAREST_MODE,
    GX_RESIZE_NATTRS
};
enum { GX_UPSAMPLE_MODE, GX_UPSAMPLE_SCALES, GX_UPSAMPLE_NATTRS };
enum { GX_PAD_MODE, GX_PAD_PADS, GX_PAD_VALUE, GX_PAD_NATTRS };
enum { GX_DEPTHTOSPACE_BLOCKSIZE, GX_DEPTHTOSPACE_MODE, GX_DEPTHTOSPACE_NATTRS };
enum { GX_SPACETODEPTH_BLOCKSIZE, GX_SPACETODEPTH_NATTRS };


/* shape */
enum { GX_RESHAPE_ALLOWZERO, GX_RESHAPE_NATTRS };
enum { GX_TRANSPOSE_PERM, GX_TRANSPOSE_NATTRS };
enum { GX_CONCAT_AXIS, GX_CONCAT_NATTRS };


/* control */
enum { GX_IF_THEN, GX_IF_ELSE, GX_IF_NATTRS };
enum { GX_LOOP_BODY, GX_LOOP_NATTRS };


/* Longest text gx_shape_str writes for GX_MAX_DIMS dims. */
#define GX_SHAPE_STRLEN (GX_MAX_DIMS * 21 + 3)

/* printf into ic->err; returns status. */
int gx_infer_errf(gx_infer *ic, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* GX_OK when input i is present and float32; else GX_ESHAPE (missing) or
 * GX_EDTYPE "<op>: <dtype> not supported (float32 only)". */
int gx_infer_need_f32(gx_infer *ic, const char *op, int i);
/* GX_OK when input i is present (any dtype); else GX_ESHAPE. */
int gx_infer_need(gx_infer *ic, const char *op, int i);
/* Sets an output's dtype, shape and numel. */
void gx_view_set(gx_view *v, gx_dtype dt, int ndim, const int64_t *shape);
/* Elements of a view computed from its shape (0 for an omitted one). */
int64_t gx_view_numel(const gx_view *v);
/* Bytes of a view computed from its shape and dtype (0 for an omitted one). */
double gx_view_bytes(const gx_view *v);
/* Bytes of all present inputs and outputs: the bytes term of most costs. */
double gx_infer_io_bytes(const gx_infer *ic);
/* Normalises axis (negative counts from the end) into [0, rank); false if
 * it is out of range. */
bool gx_axis_norm(int64_t axis, int rank, int *out);

#endif
