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
enum { GX_MOD_FMOD, GX_MOD_NATTRS };
enum { GX_CLIP_MIN, GX_CLIP_MAX, GX_CLIP_NATTRS }; /* opset 6; inputs 1 and 2 since 11 */
enum { GX_LEAKYRELU_ALPHA, GX_LEAKYRELU_NATTRS };
enum { GX_ELU_ALPHA, GX_ELU_NATTRS };
enum { GX_SELU_ALPHA, GX_SELU_GAMMA, GX_SELU_NATTRS };
enum { GX_CELU_ALPHA, GX_CELU_NATTRS };
enum { GX_HARDSIGMOID_ALPHA, GX_HARDSIGMOID_BETA, GX_HARDSIGMOID_NATTRS };
enum { GX_THRESHOLDEDRELU_ALPHA, GX_THRESHOLDEDRELU_NATTRS };
enum { GX_SHRINK_BIAS, GX_SHRINK_LAMBD, GX_SHRINK_NATTRS };
enum { GX_GELU_APPROXIMATE, GX_GELU_NATTRS };
enum { GX_SWISH_ALPHA, GX_SWISH_NATTRS }; /* opset 24 */


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
/* The gexec dtype of an ONNX TensorProto.DataType code; false for a code
 * that is not one or names a type gexec lacks. */
bool gx_onnx_dtype(int64_t code, gx_dtype *dt);
/* The bits of an element of dt that make it nonzero: all of them but a
 * float's sign (-0.0 is zero; NaN is not). NonZero's infer and kernel. */
uint64_t gx_nonzero_bits(gx_dtype dt);


/* linalg */
/* A set of accepted dtypes: GX_DT_BIT(GX_F32) | GX_DT_BIT(GX_F64) ... */
#define GX_DT_BIT(d) (1u << (d))
/* GX_OK when input i is present and its dtype in set; else GX_ESHAPE, or
 * GX_EDTYPE "<op>: input <i> is <dtype>; supported: <the set>". (Shared by
 * the linalg and reduce schemas; defined in ops/schema_linalg.c.) */
int gx_infer_need_dtypes(gx_infer *ic, const char *op, int i, unsigned set);
enum { GX_GEMM_ALPHA, GX_GEMM_BETA, GX_GEMM_TRANSA, GX_GEMM_TRANSB, GX_GEMM_NATTRS };
enum { GX_EINSUM_EQUATION, GX_EINSUM_NATTRS };

/* Einsum operands at most (each costs a row of label strides). */
#define GX_EINSUM_MAX_IN 16
/* Distinct labels at most: 52 letters plus the dims an ellipsis stands for. */
#define GX_EINSUM_MAX_LABELS (52 + GX_MAX_DIMS)

/* An Einsum equation resolved against its operands' shapes. Labels are
 * numbered 0..n_labels-1; the output walks out_label, every other label is
 * summed over. A label an operand lacks, or broadcasts (an ellipsis dim of
 * size 1), has stride 0 there; a label repeated in one term (a diagonal)
 * has the sum of its dims' strides. */
typedef struct gx_einsum {
    int n_in, n_labels;
    int64_t size[GX_EINSUM_MAX_LABELS];
    int out_ndim;
    int out_label[GX_MAX_DIMS];
    int n_sum;
    int sum_label[GX_EINSUM_MAX_LABELS];
    int64_t stride[GX_EINSUM_MAX_IN][GX_EINSUM_MAX_LABELS]; /* in elements */
} gx_einsum;

/* Parses equation (spaces ignored; explicit "->" output or numpy's implicit
 * one; "..." broadcast dims) for the n_in operands in[] (shapes only).
 * GX_OK, or GX_EATTR / GX_ESHAPE / GX_EUNSUPPORTED with a message in err. */
int gx_einsum_parse(const char *equation, int n_in, const gx_view *in, gx_einsum *e, char *err,
                    size_t errlen);


/* reduce */
/* The Reduce* ops share one attribute list (axes, the attribute form of
 * opsets < 18 and of ReduceSum < 13; later they are input 1). */
enum { GX_REDUCE_AXES, GX_REDUCE_KEEPDIMS, GX_REDUCE_NOOP_WITH_EMPTY_AXES, GX_REDUCE_NATTRS };
enum { GX_ARG_AXIS, GX_ARG_KEEPDIMS, GX_ARG_SELECT_LAST_INDEX, GX_ARG_NATTRS };
/* k: the attribute form of opset 1 (later input 1). */
enum { GX_TOPK_AXIS, GX_TOPK_LARGEST, GX_TOPK_SORTED, GX_TOPK_K, GX_TOPK_NATTRS };

/* The dims of in[0] a Reduce* node reduces (mask[d]), from the axes
 * attribute or the int64 axes input 1 (whose data must be known); no axes
 * reduce every dim, or none with noop_with_empty_axes. GX_OK or GX_EATTR /
 * GX_ESHAPE / GX_EDTYPE with a message in err. */
int gx_reduce_mask(const char *op, const gx_attrval *attr, int n_in, const gx_view *in,
                   bool mask[GX_MAX_DIMS], char *err, size_t errlen);


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
enum { GX_COL2IM_DILATIONS, GX_COL2IM_PADS, GX_COL2IM_STRIDES, GX_COL2IM_NATTRS };
enum {
    GX_DEFORMCONV_DILATIONS,
    GX_DEFORMCONV_GROUP,
    GX_DEFORMCONV_KERNEL_SHAPE,
    GX_DEFORMCONV_OFFSET_GROUP,
    GX_DEFORMCONV_PADS,
    GX_DEFORMCONV_STRIDES,
    GX_DEFORMCONV_NATTRS
}; /* opset 19 */


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
enum { GX_RMSNORM_AXIS, GX_RMSNORM_EPSILON, GX_RMSNORM_STASH_TYPE, GX_RMSNORM_NATTRS };
enum {
    GX_ATTENTION_IS_CAUSAL,
    GX_ATTENTION_KV_NUM_HEADS,
    GX_ATTENTION_Q_NUM_HEADS,
    GX_ATTENTION_QK_MATMUL_OUTPUT_MODE,
    GX_ATTENTION_SCALE,
    GX_ATTENTION_SOFTCAP,
    GX_ATTENTION_SOFTMAX_PRECISION,
    GX_ATTENTION_NATTRS
};
enum { GX_ROTARY_INTERLEAVED, GX_ROTARY_NUM_HEADS, GX_ROTARY_DIM, GX_ROTARY_NATTRS };
enum { GX_INSTANCENORM_EPSILON, GX_INSTANCENORM_NATTRS };
enum { GX_LPNORM_AXIS, GX_LPNORM_P, GX_LPNORM_NATTRS };
enum { GX_GROUPNORM_EPSILON, GX_GROUPNORM_NUM_GROUPS, GX_GROUPNORM_STASH_TYPE,
       GX_GROUPNORM_NATTRS };
enum { GX_MVN_AXES, GX_MVN_NATTRS };
enum { GX_LRN_ALPHA, GX_LRN_BETA, GX_LRN_BIAS, GX_LRN_SIZE, GX_LRN_NATTRS };
enum { GX_DROPOUT_RATIO, GX_DROPOUT_SEED, GX_DROPOUT_NATTRS };
/* Dropout's ratio: its input 1 (opset 12+; the value must be known), else
 * the attribute (before 12). */
double gx_dropout_ratio(const gx_view *in, int n_in, const gx_attrval *attr);
/* Whether a Dropout with these inputs (values known) drops elements at
 * random: training_mode true and a ratio other than 0. */
bool gx_dropout_draws(const gx_view *in, int n_in, const gx_attrval *attr);
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
enum { GX_CENTER_CROP_PAD_AXES, GX_CENTER_CROP_PAD_NATTRS };
enum { GX_DEPTHTOSPACE_BLOCKSIZE, GX_DEPTHTOSPACE_MODE, GX_DEPTHTOSPACE_NATTRS };
enum { GX_SPACETODEPTH_BLOCKSIZE, GX_SPACETODEPTH_NATTRS };


/* shape (Squeeze's and Unsqueeze's axes, Split's split and Slice's
 * starts/ends/axes are the attribute forms of opsets before 13 and 10) */
enum { GX_RESHAPE_ALLOWZERO, GX_RESHAPE_NATTRS };
enum { GX_FLATTEN_AXIS, GX_FLATTEN_NATTRS };
enum { GX_SQUEEZE_AXES, GX_SQUEEZE_NATTRS };
enum { GX_UNSQUEEZE_AXES, GX_UNSQUEEZE_NATTRS };
enum { GX_TRANSPOSE_PERM, GX_TRANSPOSE_NATTRS };
enum { GX_CONCAT_AXIS, GX_CONCAT_NATTRS };
enum { GX_SPLIT_AXIS, GX_SPLIT_SPLIT, GX_SPLIT_NUM_OUTPUTS, GX_SPLIT_NATTRS };
enum { GX_SLICE_STARTS, GX_SLICE_ENDS, GX_SLICE_AXES, GX_SLICE_NATTRS };
enum { GX_GATHER_AXIS, GX_GATHER_NATTRS };
enum { GX_GATHER_ELEMENTS_AXIS, GX_GATHER_ELEMENTS_NATTRS };
enum { GX_GATHER_ND_BATCH_DIMS, GX_GATHER_ND_NATTRS };
enum { GX_SCATTER_ELEMENTS_AXIS, GX_SCATTER_ELEMENTS_REDUCTION, GX_SCATTER_ELEMENTS_NATTRS };
enum { GX_SCATTER_ND_REDUCTION, GX_SCATTER_ND_NATTRS };
enum { GX_SCATTER_AXIS, GX_SCATTER_NATTRS };
enum { GX_TENSOR_SCATTER_AXIS, GX_TENSOR_SCATTER_MODE, GX_TENSOR_SCATTER_NATTRS }; /* opset 24 */
enum { GX_SHAPE_START, GX_SHAPE_END, GX_SHAPE_NATTRS };
enum {
    GX_CONSTANT_VALUE,
    GX_CONSTANT_VALUE_FLOAT,
    GX_CONSTANT_VALUE_FLOATS,
    GX_CONSTANT_VALUE_INT,
    GX_CONSTANT_VALUE_INTS,
    GX_CONSTANT_VALUE_STRING,
    GX_CONSTANT_NATTRS
};
enum { GX_CONSTANT_OF_SHAPE_VALUE, GX_CONSTANT_OF_SHAPE_NATTRS };
enum { GX_REVERSE_SEQUENCE_BATCH_AXIS, GX_REVERSE_SEQUENCE_TIME_AXIS, GX_REVERSE_SEQUENCE_NATTRS };


/* loss (NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss share one
 * attribute list; ignore_index has no default: unset, no label is ignored) */
enum { GX_LOSS_IGNORE_INDEX, GX_LOSS_REDUCTION, GX_LOSS_NATTRS };


/* quant (block_size: opset 21's blocked quantisation, only 0 is accepted) */
enum { GX_QUANTIZE_AXIS, GX_QUANTIZE_SATURATE, GX_QUANTIZE_BLOCK_SIZE, GX_QUANTIZE_NATTRS };
enum { GX_DEQUANTIZE_AXIS, GX_DEQUANTIZE_BLOCK_SIZE, GX_DEQUANTIZE_NATTRS };
enum { GX_UNIQUE_AXIS, GX_UNIQUE_SORTED, GX_UNIQUE_NATTRS };
/* QLinearConv: the GX_WIN_ attributes (ops/conv.h) then group */
enum { GX_QLINEARCONV_GROUP = GX_WIN_NATTRS, GX_QLINEARCONV_NATTRS };

/* Unique of x's slices along axis (the elements of x when flatten): x as
 * [outer, n, inner], slice i is x[:, i, :], compared lexicographically.
 * work holds 6 * n int64; returns the unique count u and
 * leaves in it, for the output order (sorted, or by first occurrence):
 * work[0..u) the first index of each unique slice, work[n..n+u) its count,
 * and work[2n..3n) the output position of every slice (inverse_indices).
 * Shared by Unique's infer (which needs u) and its kernel. */
int64_t gx_unique_run(const gx_view *x, bool flatten, int axis, bool sorted, int64_t *work);

enum { GX_NMS_CENTER_POINT_BOX, GX_NMS_NATTRS };
/* NonMaxSuppression of in[] (boxes, scores and the optional limit and
 * thresholds, whose values must be known) into the selected rows (batch,
 * class, box) of out, or only counted when out is NULL; work holds 3 * N
 * int64 (N: boxes per batch). Returns the number selected. Shared by the
 * infer (which needs the count) and the kernel. */
int64_t gx_nms_run(int n_in, const gx_view *in, bool center, int64_t *out, int64_t *work);


/* rnn: RNN, GRU and LSTM share their first attributes; GRU and LSTM add
 * one each after them. */
enum {
    GX_RNN_ACTIVATION_ALPHA,
    GX_RNN_ACTIVATION_BETA,
    GX_RNN_CLIP,
    GX_RNN_DIRECTION,
    GX_RNN_HIDDEN_SIZE,
    GX_RNN_LAYOUT,
    GX_RNN_NATTRS
};
enum { GX_GRU_LINEAR_BEFORE_RESET = GX_RNN_NATTRS, GX_GRU_NATTRS };
enum { GX_LSTM_INPUT_FORGET = GX_RNN_NATTRS, GX_LSTM_NATTRS };

/* Time steps whose input products (X_t W^T, [batch, gh] each) an RNN, GRU
 * or LSTM kernel computes as one product: as many of seq as fit in about
 * 256 KiB, at least one. The kernel's scratch holds them (schema_rnn.c). */
static inline int64_t gx_rnn_chunk(int64_t seq, int64_t batch, int64_t gh)
{
    const int64_t row = batch * gh > 0 ? batch * gh : 1;
    const int64_t n = (int64_t)(256 << 10) / (int64_t)sizeof(float) / row;
    return n < 1 ? 1 : n < seq ? n : (seq > 0 ? seq : 1);
}


/* signal (the three window ops share one attribute list) */
enum { GX_WINDOW_OUTPUT_DATATYPE, GX_WINDOW_PERIODIC, GX_WINDOW_NATTRS };
enum { GX_DFT_AXIS, GX_DFT_INVERSE, GX_DFT_ONESIDED, GX_DFT_NATTRS };
enum { GX_STFT_ONESIDED, GX_STFT_NATTRS };
enum { GX_MEL_WEIGHT_MATRIX_OUTPUT_DATATYPE, GX_MEL_WEIGHT_MATRIX_NATTRS };


/* vision */
enum { GX_GRIDSAMPLE_ALIGN_CORNERS, GX_GRIDSAMPLE_MODE, GX_GRIDSAMPLE_PADDING_MODE,
       GX_GRIDSAMPLE_NATTRS };
enum {
    GX_ROIALIGN_COORD_MODE,
    GX_ROIALIGN_MODE,
    GX_ROIALIGN_OUTPUT_HEIGHT,
    GX_ROIALIGN_OUTPUT_WIDTH,
    GX_ROIALIGN_SAMPLING_RATIO,
    GX_ROIALIGN_SPATIAL_SCALE,
    GX_ROIALIGN_NATTRS
};
enum { GX_MAXROIPOOL_POOLED_SHAPE, GX_MAXROIPOOL_SPATIAL_SCALE, GX_MAXROIPOOL_NATTRS };
enum { GX_AFFINE_GRID_ALIGN_CORNERS, GX_AFFINE_GRID_NATTRS };


/* text */
enum {
    GX_TFIDF_MAX_GRAM_LENGTH,
    GX_TFIDF_MAX_SKIP_COUNT,
    GX_TFIDF_MIN_GRAM_LENGTH,
    GX_TFIDF_MODE,
    GX_TFIDF_NGRAM_COUNTS,
    GX_TFIDF_NGRAM_INDEXES,
    GX_TFIDF_POOL_INT64S,
    GX_TFIDF_WEIGHTS,
    GX_TFIDF_POOL_STRINGS, /* ONNX's STRINGS: a 1-D string tensor attribute */
    GX_TFIDF_NATTRS
};
/* The output columns of a TfIdfVectorizer whose attributes infer
 * accepted: 1 + the largest of ngram_indexes. */
int64_t gx_tfidf_columns(const gx_attrval *attr);
/* The size of its pool (pool_int64s or pool_strings, whichever is set). */
int64_t gx_tfidf_pool_size(const gx_attrval *attr);
enum {
    GX_STRNORM_CASE_CHANGE_ACTION,
    GX_STRNORM_IS_CASE_SENSITIVE,
    GX_STRNORM_LOCALE,
    GX_STRNORM_STOPWORDS,
    GX_STRNORM_NATTRS
};
enum { GX_STRSPLIT_DELIMITER, GX_STRSPLIT_MAXSPLIT, GX_STRSPLIT_NATTRS };

/* Unicode case mapping of the string ops (ops/schema_text.c): UTF-8 in,
 * UTF-8 out, code point by code point (the C.UTF-8 locale's simple case
 * mapping; ASCII only where that locale is missing); bytes that are not
 * UTF-8 pass unchanged. gx_text_case writes the mapped bytes of s[0..n) to
 * dst (NULL: only counts them) and returns their length; up: upper case,
 * else lower. gx_text_eq_nocase compares two strings case-insensitively
 * (lower-cased). */
size_t gx_text_case(const char *s, size_t n, bool up, char *dst);
bool gx_text_eq_nocase(const char *a, size_t na, const char *b, size_t nb);
/* Whether StringNormalizer (its resolved attributes) drops string r. */
bool gx_strnorm_drops(const gx_attrval *attr, const gx_strrec *r);
/* StringSplit of r (attributes attr): calls fn(ctx, piece, len) for each
 * substring, at most 1 + maxsplit of them; returns how many there are. */
int64_t gx_strsplit(const gx_attrval *attr, const gx_strrec *r,
                    void (*fn)(void *ctx, int64_t i, const char *p, size_t n), void *ctx);


/* ml (ai.onnx.ml, ops/schema_ml.c): attributes in ONNX's names; a list of
 * strings (STRINGS) is a 1-D string tensor attribute. */
enum {
    GX_LABENC_CLASSES_STRINGS, /* opset 1 */
    GX_LABENC_DEFAULT_FLOAT,
    GX_LABENC_DEFAULT_INT64,
    GX_LABENC_DEFAULT_STRING,
    GX_LABENC_DEFAULT_TENSOR,
    GX_LABENC_KEYS_FLOATS,
    GX_LABENC_KEYS_INT64S,
    GX_LABENC_KEYS_STRINGS,
    GX_LABENC_KEYS_TENSOR,
    GX_LABENC_VALUES_FLOATS,
    GX_LABENC_VALUES_INT64S,
    GX_LABENC_VALUES_STRINGS,
    GX_LABENC_VALUES_TENSOR,
    GX_LABENC_NATTRS
};
enum { GX_SCALER_OFFSET, GX_SCALER_SCALE, GX_SCALER_NATTRS };
enum { GX_NORMALIZER_NORM, GX_NORMALIZER_NATTRS };
enum { GX_BINARIZER_THRESHOLD, GX_BINARIZER_NATTRS };
enum {
    GX_IMPUTER_IMPUTED_VALUE_FLOATS,
    GX_IMPUTER_IMPUTED_VALUE_INT64S,
    GX_IMPUTER_REPLACED_VALUE_FLOAT,
    GX_IMPUTER_REPLACED_VALUE_INT64,
    GX_IMPUTER_NATTRS
};
enum { GX_OHE_CATS_INT64S, GX_OHE_CATS_STRINGS, GX_OHE_ZEROS, GX_OHE_NATTRS };
/* OneHotEncoder's category of element i of x (resolved attributes a); -1
 * when it is none. */
int64_t gx_ohe_find(const gx_attrval *a, const gx_view *x, int64_t i);
enum { GX_FEATVEC_INPUTDIMENSIONS, GX_FEATVEC_NATTRS };
enum {
    GX_LINREG_COEFFICIENTS,
    GX_LINREG_INTERCEPTS,
    GX_LINREG_POST_TRANSFORM,
    GX_LINREG_TARGETS,
    GX_LINREG_NATTRS
};
enum {
    GX_LINCLS_CLASSLABELS_INTS,
    GX_LINCLS_CLASSLABELS_STRINGS,
    GX_LINCLS_COEFFICIENTS,
    GX_LINCLS_INTERCEPTS,
    GX_LINCLS_MULTI_CLASS,
    GX_LINCLS_POST_TRANSFORM,
    GX_LINCLS_NATTRS
};
/* TreeEnsembleRegressor and TreeEnsembleClassifier share the nodes_*
 * attributes, post_transform and base_values at these indexes; the leaf
 * weights are target_* or class_*, each op's own (GX_TREE_W_*). */
enum {
    GX_TREE_NODES_FALSENODEIDS,
    GX_TREE_NODES_FEATUREIDS,
    GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE,
    GX_TREE_NODES_MODES,
    GX_TREE_NODES_NODEIDS,
    GX_TREE_NODES_TREEIDS,
    GX_TREE_NODES_TRUENODEIDS,
    GX_TREE_NODES_VALUES,
    GX_TREE_NODES_VALUES_AS_TENSOR, /* float64 (opset 3): used instead when set */
    GX_TREE_POST_TRANSFORM,
    GX_TREE_BASE_VALUES,
    GX_TREE_BASE_VALUES_AS_TENSOR,
    GX_TREE_W_IDS,     /* target_ids / class_ids */
    GX_TREE_W_NODEIDS, /* target_nodeids / class_nodeids */
    GX_TREE_W_TREEIDS,
    GX_TREE_W_WEIGHTS,
    GX_TREE_W_WEIGHTS_AS_TENSOR,
    GX_TREE_REG_AGGREGATE_FUNCTION, /* regressor */
    GX_TREE_REG_N_TARGETS,
    GX_TREE_REG_NATTRS
};
enum {
    GX_TREE_CLS_CLASSLABELS_INT64S = GX_TREE_W_WEIGHTS_AS_TENSOR + 1, /* classifier */
    GX_TREE_CLS_CLASSLABELS_STRINGS,
    GX_TREE_CLS_NATTRS
};
/* TreeEnsemble (opset 5): interior nodes (nodes_*) and leaves (leaf_*)
 * apart, children by index, modes uint8 (GX_TREE_LEQ... GX_TREE_NEQ, 6
 * BRANCH_MEMBER), splits, weights and membership values of the input's
 * dtype, aggregate_function and post_transform as numbers. */
enum {
    GX_TREE5_AGGREGATE_FUNCTION, /* 0 AVERAGE, 1 SUM, 2 MIN, 3 MAX */
    GX_TREE5_LEAF_TARGETIDS,
    GX_TREE5_LEAF_WEIGHTS,
    GX_TREE5_MEMBERSHIP_VALUES, /* the BRANCH_MEMBER nodes' sets in order, NaN between */
    GX_TREE5_N_TARGETS,
    GX_TREE5_NODES_FALSELEAFS,
    GX_TREE5_NODES_FALSENODEIDS,
    GX_TREE5_NODES_FEATUREIDS,
    GX_TREE5_NODES_MISSING_VALUE_TRACKS_TRUE,
    GX_TREE5_NODES_MODES,
    GX_TREE5_NODES_SPLITS,
    GX_TREE5_NODES_TRUELEAFS,
    GX_TREE5_NODES_TRUENODEIDS,
    GX_TREE5_POST_TRANSFORM, /* GX_ML_NONE... GX_ML_PROBIT */
    GX_TREE5_TREE_ROOTS,
    GX_TREE5_NATTRS
};
/* The ml ops' number lists given as FLOATS or as a float32/float64
 * tensor (the *_as_tensor attributes): how many (the tensor's when set)
 * and the i-th as a double (a FLOATS entry rounded to float32 first). */
int64_t gx_ml_count(const gx_attrval *a, int floats, int tensor);
double gx_ml_num(const gx_attrval *a, int floats, int tensor, int64_t i);
/* SVMRegressor, SVMClassifier: ONNX's attributes, the shared ones first. */
enum {
    GX_SVM_COEFFICIENTS,
    GX_SVM_KERNEL_PARAMS, /* gamma, coef0, degree */
    GX_SVM_KERNEL_TYPE,
    GX_SVM_POST_TRANSFORM,
    GX_SVM_RHO,
    GX_SVM_SUPPORT_VECTORS,
    GX_SVMR_N_SUPPORTS = GX_SVM_SUPPORT_VECTORS + 1, /* regressor */
    GX_SVMR_ONE_CLASS,
    GX_SVMR_NATTRS
};
enum {
    GX_SVMC_CLASSLABELS_INTS = GX_SVM_SUPPORT_VECTORS + 1, /* classifier */
    GX_SVMC_CLASSLABELS_STRINGS,
    GX_SVMC_PROB_A,
    GX_SVMC_PROB_B,
    GX_SVMC_VECTORS_PER_CLASS,
    GX_SVMC_NATTRS
};
enum { GX_SVM_LINEAR, GX_SVM_POLY, GX_SVM_RBF, GX_SVM_SIGMOID };
/* The kernel_type s as GX_SVM_*; -1 for none. */
int gx_svm_kernel(const char *s);
/* An SVMClassifier's sizes (its attributes accepted by infer): classes,
 * support vectors (0: liblinear mode) and features. */
void gx_svm_sizes(const gx_attrval *a, int64_t *classes, int64_t *vectors, int64_t *features);
enum {
    GX_CATMAP_CATS_INT64S,
    GX_CATMAP_CATS_STRINGS,
    GX_CATMAP_DEFAULT_INT64,
    GX_CATMAP_DEFAULT_STRING,
    GX_CATMAP_NATTRS
};
/* The post_transform names of the ml ops, in this order. */
enum { GX_ML_NONE, GX_ML_LOGISTIC, GX_ML_SOFTMAX, GX_ML_SOFTMAX_ZERO, GX_ML_PROBIT };
/* The post_transform s as one of those; -1 when it is none of them. */
int gx_ml_transform(const char *s);
/* LabelEncoder's keys or values as given: dtype float64 with as_f32 for a
 * FLOATS list (doubles holding float32 values), int64, or a tensor's own
 * dtype (string handles...). gx_labenc_side returns how many of the four
 * attributes of that side are set; *out is filled when that is 1. */
typedef struct gx_labenc_list {
    gx_dtype dtype;
    bool as_f32;
    int64_t n;
    const void *data;
} gx_labenc_list;
int gx_labenc_side(const gx_attrval *a, bool values, gx_labenc_list *out);

/* Tree nodes' modes, in the order of their names. */
enum {
    GX_TREE_LEQ,
    GX_TREE_LT,
    GX_TREE_GTE,
    GX_TREE_GT,
    GX_TREE_EQ,
    GX_TREE_NEQ,
    GX_TREE_LEAF,
    GX_TREE_MEMBER /* TreeEnsemble's BRANCH_MEMBER (no name in opsets 1-3) */
};
/* The mode named by r (BRANCH_LEQ... LEAF); -1 for none. */
int gx_tree_mode(const gx_strrec *r);
/* A node's or a leaf weight's (tree id, node id) and its position in its
 * attribute lists; sorted by gx_tree_sort (no allocation), looked up by
 * gx_tree_find (the first position with those ids, or -1). */
typedef struct gx_tree_key {
    int64_t tree, node, idx;
} gx_tree_key;
void gx_tree_sort(gx_tree_key *k, size_t n);
int64_t gx_tree_find(const gx_tree_key *k, size_t n, int64_t tree, int64_t node);
/* A node as the kernel walks it, whichever opset's attributes it came
 * from: its children's positions (-1: a leaf), the range of its weights in
 * the weight table, of a BRANCH_MEMBER's set in the members, the feature
 * it tests and the threshold (float32 attributes widened exactly). */
typedef struct gx_tree_node {
    int64_t yes, no, wlo, whi, mlo, mhi, feature;
    double value;
    int mode;
    bool nan_yes; /* nodes_missing_value_tracks_true */
} gx_tree_node;
/* A leaf's weight for output id. */
typedef struct gx_tree_weight {
    int64_t id;
    double w;
} gx_tree_weight;
/* The tree ensembles' scratch: node keys, weight keys, nodes, roots,
 * weights, membership values, built by one share, and the n_out scores of
 * a row for each of GX_TREE_BLOCKS blocks of rows the shares split. */
#define GX_TREE_BLOCKS 16
size_t gx_tree_scratch_bytes(size_t n_nodes, size_t n_weights, size_t n_members, size_t n_out);
/* Whether TreeEnsemble's (opset 5) tree at interior node root is one leaf
 * (ONNX Runtime: its true and false ids are equal; the leaf is leaf root). */
bool gx_tree5_root_is_leaf(const gx_attrval *a, int64_t root);

/* training (ai.onnx.preview.training) */
enum { GX_ADAGRAD_DECAY_FACTOR, GX_ADAGRAD_EPSILON, GX_ADAGRAD_NORM_COEFFICIENT,
       GX_ADAGRAD_NATTRS };
enum { GX_ADAM_ALPHA, GX_ADAM_BETA, GX_ADAM_EPSILON, GX_ADAM_NORM_COEFFICIENT,
       GX_ADAM_NORM_COEFFICIENT_POST, GX_ADAM_NATTRS };
enum { GX_MOMENTUM_ALPHA, GX_MOMENTUM_BETA, GX_MOMENTUM_MODE, GX_MOMENTUM_NORM_COEFFICIENT,
       GX_MOMENTUM_NATTRS };

/* random: RandomUniform and RandomNormal take all five, their *Like forms
 * the first four (A and B: low and high, or mean and scale) */
enum { GX_RANDOM_DTYPE, GX_RANDOM_A, GX_RANDOM_B, GX_RANDOM_SEED, GX_RANDOM_SHAPE,
       GX_RANDOM_NATTRS };
#define GX_RANDOM_LIKE_NATTRS GX_RANDOM_SHAPE
enum { GX_BERNOULLI_DTYPE, GX_BERNOULLI_SEED, GX_BERNOULLI_NATTRS };
enum { GX_MULTINOMIAL_DTYPE, GX_MULTINOMIAL_SAMPLE_SIZE, GX_MULTINOMIAL_SEED,
       GX_MULTINOMIAL_NATTRS };


/* control */
enum { GX_IF_THEN, GX_IF_ELSE, GX_IF_NATTRS };
enum { GX_LOOP_BODY, GX_LOOP_NATTRS };
enum {
    GX_SCAN_BODY,
    GX_SCAN_NUM_SCAN_INPUTS,
    GX_SCAN_INPUT_AXES,
    GX_SCAN_INPUT_DIRECTIONS,
    GX_SCAN_OUTPUT_AXES,
    GX_SCAN_OUTPUT_DIRECTIONS,
    GX_SCAN_NATTRS
};


/* sequence and optional values */
enum { GX_SEQUENCE_EMPTY_DTYPE, GX_SEQUENCE_EMPTY_NATTRS };
enum { GX_SPLIT_TO_SEQUENCE_AXIS, GX_SPLIT_TO_SEQUENCE_KEEPDIMS, GX_SPLIT_TO_SEQUENCE_NATTRS };
enum { GX_CONCAT_FROM_SEQUENCE_AXIS, GX_CONCAT_FROM_SEQUENCE_NEW_AXIS,
       GX_CONCAT_FROM_SEQUENCE_NATTRS };
enum { GX_SEQUENCE_MAP_BODY, GX_SEQUENCE_MAP_NATTRS };


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
