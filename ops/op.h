/*
 * The op library: one list of ops, a schema per op (arity, attributes with
 * defaults, shape/dtype inference, cost estimate, flags) and kernels per
 * device. Adding an op:
 *   1. add a row to GX_OP_LIST below;
 *   2. write its schema in ops/schema_*.c and list it in ops/schema.c;
 *   3. write its CPU kernel in ops/cpu/ and list it in ops/cpu/kernels.c;
 *   4. add conformance cases to tests/check_ops.c.
 * The compiler refuses a switch over gx_op that misses one (-Wswitch-enum),
 * and the tables are static_assert'ed to have GX_OP_COUNT rows.
 *
 * Semantics, names and attributes follow the ONNX operator specification
 * (opset 13+), numpy-style broadcasting included.
 */
#ifndef GX_OPS_OP_H
#define GX_OPS_OP_H

#include "core/internal.h"

/* X(enum suffix, ONNX op name), one list per family; each family's schemas
 * live in ops/schema_<family>.c and its CPU kernels in ops/cpu/. */
#define GX_OPS_MATH(X)                                                        \
    X(ADD, "Add")                                                             \
    X(SUB, "Sub")                                                             \
    X(MUL, "Mul")                                                             \
    X(DIV, "Div")                                                             \
    X(RELU, "Relu")                                                           \
    X(SIGMOID, "Sigmoid")                                                     \
    X(TANH, "Tanh")                                                           \
    X(EXP, "Exp")                                                             \
    X(POW, "Pow")                                                             \
    X(MOD, "Mod")                                                             \
    X(PRELU, "PRelu")                                                         \
    X(MIN, "Min")                                                             \
    X(MAX, "Max")                                                             \
    X(SUM, "Sum")                                                             \
    X(MEAN, "Mean")                                                           \
    X(NEG, "Neg")                                                             \
    X(ABS, "Abs")                                                             \
    X(SIGN, "Sign")                                                           \
    X(SQRT, "Sqrt")                                                           \
    X(RECIPROCAL, "Reciprocal")                                               \
    X(LOG, "Log")                                                             \
    X(ERF, "Erf")                                                             \
    X(FLOOR, "Floor")                                                         \
    X(CEIL, "Ceil")                                                           \
    X(ROUND, "Round")                                                         \
    X(CLIP, "Clip")                                                           \
    X(LEAKYRELU, "LeakyRelu")                                                 \
    X(ELU, "Elu")                                                             \
    X(SELU, "Selu")                                                           \
    X(CELU, "Celu")                                                           \
    X(HARDSIGMOID, "HardSigmoid")                                             \
    X(HARDSWISH, "HardSwish")                                                 \
    X(SOFTPLUS, "Softplus")                                                   \
    X(SOFTSIGN, "Softsign")                                                   \
    X(THRESHOLDEDRELU, "ThresholdedRelu")                                     \
    X(SHRINK, "Shrink")                                                       \
    X(GELU, "Gelu")                                                           \
    X(SIN, "Sin")                                                             \
    X(COS, "Cos")                                                             \
    X(TAN, "Tan")                                                             \
    X(ASIN, "Asin")                                                           \
    X(ACOS, "Acos")                                                           \
    X(ATAN, "Atan")                                                           \
    X(SINH, "Sinh")                                                           \
    X(COSH, "Cosh")                                                           \
    X(ASINH, "Asinh")                                                         \
    X(ACOSH, "Acosh")                                                         \
    X(ATANH, "Atanh")                                                         \
    X(MISH, "Mish")                                                           \
    X(SWISH, "Swish")                                                         \
    X(ROUND_F16, "RoundToFloat16")


#define GX_OPS_LOGIC(X)                                                       \
    X(EQUAL, "Equal")                                                         \
    X(LESS, "Less")                                                           \
    X(GREATER, "Greater")                                                     \
    X(LESS_OR_EQUAL, "LessOrEqual")                                           \
    X(GREATER_OR_EQUAL, "GreaterOrEqual")                                     \
    X(NOT, "Not")                                                             \
    X(AND, "And")                                                             \
    X(OR, "Or")                                                               \
    X(XOR, "Xor")                                                             \
    X(BIT_SHIFT, "BitShift")                                                  \
    X(BITWISE_AND, "BitwiseAnd")                                              \
    X(BITWISE_OR, "BitwiseOr")                                                \
    X(BITWISE_XOR, "BitwiseXor")                                              \
    X(BITWISE_NOT, "BitwiseNot")                                              \
    X(WHERE, "Where")                                                         \
    X(ISNAN, "IsNaN")                                                         \
    X(ISINF, "IsInf")                                                         \
    X(CAST, "Cast")                                                           \
    X(CAST_LIKE, "CastLike")                                                  \
    X(CUMSUM, "CumSum")                                                       \
    X(TRILU, "Trilu")                                                         \
    X(ONE_HOT, "OneHot")                                                      \
    X(RANGE, "Range")                                                         \
    X(EYE_LIKE, "EyeLike")                                                    \
    X(NONZERO, "NonZero")                                                     \
    X(COMPRESS, "Compress")


#define GX_OPS_LINALG(X)                                                      \
    X(MATMUL, "MatMul")                                                       \
    X(GEMM, "Gemm")                                                           \
    X(MATMUL_INTEGER, "MatMulInteger")                                        \
    X(EINSUM, "Einsum")                                                       \
    X(DET, "Det")


#define GX_OPS_REDUCE(X)                                                      \
    X(REDUCE_SUM, "ReduceSum")                                                \
    X(REDUCE_MEAN, "ReduceMean")                                              \
    X(REDUCE_MAX, "ReduceMax")                                                \
    X(REDUCE_MIN, "ReduceMin")                                                \
    X(REDUCE_PROD, "ReduceProd")                                              \
    X(REDUCE_L1, "ReduceL1")                                                  \
    X(REDUCE_L2, "ReduceL2")                                                  \
    X(REDUCE_LOG_SUM, "ReduceLogSum")                                         \
    X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp")                                  \
    X(REDUCE_SUM_SQUARE, "ReduceSumSquare")                                   \
    X(ARGMAX, "ArgMax")                                                       \
    X(ARGMIN, "ArgMin")                                                       \
    X(TOPK, "TopK")


#define GX_OPS_CONV(X)                                                        \
    X(CONV, "Conv")                                                           \
    X(CONVINTEGER, "ConvInteger")                                             \
    X(CONVTRANSPOSE, "ConvTranspose")                                         \
    X(MAXPOOL, "MaxPool")                                                     \
    X(AVERAGEPOOL, "AveragePool")                                             \
    X(LPPOOL, "LpPool")                                                       \
    X(GLOBALMAXPOOL, "GlobalMaxPool")                                         \
    X(GLOBALAVERAGEPOOL, "GlobalAveragePool")                                 \
    X(GLOBALLPPOOL, "GlobalLpPool")                                           \
    X(MAXUNPOOL, "MaxUnpool")                                                 \
    X(COL2IM, "Col2Im")                                                       \
    X(DEFORMCONV, "DeformConv")


#define GX_OPS_NN(X)                                                          \
    X(SOFTMAX, "Softmax")                                                     \
    X(LOGSOFTMAX, "LogSoftmax")                                               \
    X(HARDMAX, "Hardmax")                                                     \
    X(BATCHNORM, "BatchNormalization")                                        \
    X(LAYERNORM, "LayerNormalization")                                        \
    X(RMSNORM, "RMSNormalization")                                            \
    X(LPNORM, "LpNormalization")                                              \
    X(GROUPNORM, "GroupNormalization")                                        \
    X(ATTENTION, "Attention")                                                 \
    X(ROTARY_EMBEDDING, "RotaryEmbedding")                                    \
    X(INSTANCENORM, "InstanceNormalization")                                  \
    X(MVN, "MeanVarianceNormalization")                                       \
    X(LRN, "LRN")                                                             \
    X(DROPOUT, "Dropout")                                                     \
    X(RESIZE, "Resize")                                                       \
    X(UPSAMPLE, "Upsample")                                                   \
    X(PAD, "Pad")                                                             \
    X(CENTER_CROP_PAD, "CenterCropPad")                                       \
    X(DEPTHTOSPACE, "DepthToSpace")                                           \
    X(SPACETODEPTH, "SpaceToDepth")


#define GX_OPS_SHAPE(X)                                                       \
    X(RESHAPE, "Reshape")                                                     \
    X(FLATTEN, "Flatten")                                                     \
    X(SQUEEZE, "Squeeze")                                                     \
    X(UNSQUEEZE, "Unsqueeze")                                                 \
    X(TRANSPOSE, "Transpose")                                                 \
    X(CONCAT, "Concat")                                                       \
    X(SPLIT, "Split")                                                         \
    X(SLICE, "Slice")                                                         \
    X(GATHER, "Gather")                                                       \
    X(GATHER_ELEMENTS, "GatherElements")                                      \
    X(GATHER_ND, "GatherND")                                                  \
    X(SCATTER_ELEMENTS, "ScatterElements")                                    \
    X(SCATTER_ND, "ScatterND")                                                \
    X(SCATTER, "Scatter")                                                     \
    X(TENSOR_SCATTER, "TensorScatter")                                        \
    X(EXPAND, "Expand")                                                       \
    X(TILE, "Tile")                                                           \
    X(SHAPE, "Shape")                                                         \
    X(SIZE, "Size")                                                           \
    X(CONSTANT, "Constant")                                                   \
    X(CONSTANT_OF_SHAPE, "ConstantOfShape")                                   \
    X(IDENTITY, "Identity")                                                   \
    X(REVERSE_SEQUENCE, "ReverseSequence")


#define GX_OPS_LOSS(X)                                                        \
    X(NLLLOSS, "NegativeLogLikelihoodLoss")                                   \
    X(SCELOSS, "SoftmaxCrossEntropyLoss")


#define GX_OPS_QUANT(X)                                                       \
    X(QUANTIZE_LINEAR, "QuantizeLinear")                                      \
    X(DEQUANTIZE_LINEAR, "DequantizeLinear")                                  \
    X(DYNAMIC_QUANTIZE_LINEAR, "DynamicQuantizeLinear")                       \
    X(QLINEAR_MATMUL, "QLinearMatMul")                                        \
    X(QLINEAR_CONV, "QLinearConv")                                            \
    X(UNIQUE, "Unique")                                                       \
    X(NON_MAX_SUPPRESSION, "NonMaxSuppression")


#define GX_OPS_RNN(X)                                                         \
    X(RNN, "RNN")                                                             \
    X(GRU, "GRU")                                                             \
    X(LSTM, "LSTM")


#define GX_OPS_SIGNAL(X)                                                      \
    X(HANN_WINDOW, "HannWindow")                                              \
    X(HAMMING_WINDOW, "HammingWindow")                                        \
    X(BLACKMAN_WINDOW, "BlackmanWindow")                                      \
    X(DFT, "DFT")                                                             \
    X(STFT, "STFT")                                                           \
    X(MEL_WEIGHT_MATRIX, "MelWeightMatrix")


#define GX_OPS_VISION(X)                                                      \
    X(GRIDSAMPLE, "GridSample")                                               \
    X(ROIALIGN, "RoiAlign")                                                   \
    X(MAXROIPOOL, "MaxRoiPool")                                               \
    X(AFFINE_GRID, "AffineGrid")


/* Text: n-gram counts of token ids or strings, and the string ops
 * (docs/strings.md). */
#define GX_OPS_TEXT(X)                                                        \
    X(TFIDF_VECTORIZER, "TfIdfVectorizer")                                    \
    X(STRING_NORMALIZER, "StringNormalizer")                                  \
    X(STRING_CONCAT, "StringConcat")                                          \
    X(STRING_SPLIT, "StringSplit")


/* The ai.onnx.ml domain's ops (docs/onnx.md, "Other domains"): the
 * preprocessing and the linear, tree and SVM models that sklearn-onnx and
 * onnxmltools export, with ONNX Runtime's semantics where the spec is
 * silent. Schemas in ops/schema_ml.c, CPU kernels in ops/cpu/ml.c. */
#define GX_OPS_ML(X)                                                          \
    X(LABEL_ENCODER, "LabelEncoder")                                          \
    X(SCALER, "Scaler")                                                       \
    X(NORMALIZER, "Normalizer")                                               \
    X(BINARIZER, "Binarizer")                                                 \
    X(IMPUTER, "Imputer")                                                     \
    X(ARRAY_FEATURE_EXTRACTOR, "ArrayFeatureExtractor")                       \
    X(ONE_HOT_ENCODER, "OneHotEncoder")                                       \
    X(FEATURE_VECTORIZER, "FeatureVectorizer")                                \
    X(LINEAR_REGRESSOR, "LinearRegressor")                                    \
    X(LINEAR_CLASSIFIER, "LinearClassifier")                                  \
    X(TREE_ENSEMBLE_REGRESSOR, "TreeEnsembleRegressor")                       \
    X(TREE_ENSEMBLE_CLASSIFIER, "TreeEnsembleClassifier")                     \
    X(TREE_ENSEMBLE, "TreeEnsemble")                                          \
    X(SVM_REGRESSOR, "SVMRegressor")                                          \
    X(SVM_CLASSIFIER, "SVMClassifier")                                        \
    X(CATEGORY_MAPPER, "CategoryMapper")


/* The optimizer steps of the ai.onnx.preview.training domain (opset 1):
 * elementwise updates of several tensors at once. */
#define GX_OPS_TRAINING(X)                                                    \
    X(ADAGRAD, "Adagrad")                                                     \
    X(ADAM, "Adam")                                                           \
    X(MOMENTUM, "Momentum")

/* Random numbers (ops/cpu/random.c): drawn at every run, never folded. */
#define GX_OPS_RANDOM(X)                                                      \
    X(RANDOM_UNIFORM, "RandomUniform")                                        \
    X(RANDOM_NORMAL, "RandomNormal")                                          \
    X(RANDOM_UNIFORM_LIKE, "RandomUniformLike")                               \
    X(RANDOM_NORMAL_LIKE, "RandomNormalLike")                                 \
    X(BERNOULLI, "Bernoulli")                                                 \
    X(MULTINOMIAL, "Multinomial")


#define GX_OPS_CONTROL(X)                                                     \
    X(IF, "If")                                                               \
    X(LOOP, "Loop")                                                           \
    X(SCAN, "Scan")


/* Ops over sequence and optional values (ONNX sequence(tensor),
 * optional(...)): run by the executor (daemon/exec/values.c), like control
 * flow, as their values are not tensors in an arena. */
#define GX_OPS_SEQUENCE(X)                                                    \
    X(SEQUENCE_EMPTY, "SequenceEmpty")                                        \
    X(SEQUENCE_CONSTRUCT, "SequenceConstruct")                                \
    X(SEQUENCE_INSERT, "SequenceInsert")                                      \
    X(SEQUENCE_AT, "SequenceAt")                                              \
    X(SEQUENCE_ERASE, "SequenceErase")                                        \
    X(SEQUENCE_LENGTH, "SequenceLength")                                      \
    X(SPLIT_TO_SEQUENCE, "SplitToSequence")                                   \
    X(CONCAT_FROM_SEQUENCE, "ConcatFromSequence")                             \
    X(SEQUENCE_MAP, "SequenceMap")                                            \
    X(OPTIONAL, "Optional")                                                   \
    X(OPTIONAL_HAS_ELEMENT, "OptionalHasElement")                             \
    X(OPTIONAL_GET_ELEMENT, "OptionalGetElement")


/* Every op but control flow and the sequence ops has a kernel per device
 * (ops/cpu/cpu.h); the executor runs those itself. */
#define GX_KERNEL_OP_LIST(X)                                                  \
    GX_OPS_MATH(X)                                                            \
    GX_OPS_LOGIC(X)                                                           \
    GX_OPS_LINALG(X)                                                          \
    GX_OPS_REDUCE(X)                                                          \
    GX_OPS_CONV(X)                                                            \
    GX_OPS_NN(X)                                                              \
    GX_OPS_SHAPE(X)                                                           \
    GX_OPS_LOSS(X)                                                            \
    GX_OPS_QUANT(X)                                                           \
    GX_OPS_RNN(X)                                                             \
    GX_OPS_SIGNAL(X)                                                          \
    GX_OPS_VISION(X)                                                          \
    GX_OPS_TEXT(X)                                                            \
    GX_OPS_ML(X)                                                              \
    GX_OPS_TRAINING(X)                                                        \
    GX_OPS_RANDOM(X)

#define GX_OP_LIST(X)                                                         \
    GX_KERNEL_OP_LIST(X)                                                      \
    GX_OPS_CONTROL(X)                                                         \
    GX_OPS_SEQUENCE(X)

typedef enum gx_op {
#define GX_OP_ENUM(e, name) GX_OP_##e,
    GX_OP_LIST(GX_OP_ENUM)
#undef GX_OP_ENUM
    GX_OP_COUNT
} gx_op;

/* ONNX name of op; static storage. */
const char *gx_op_name(gx_op op);
/* Find an op by ONNX name (case-sensitive). GX_OK or GX_EOP. */
int gx_op_lookup(const char *name, gx_op *op);

#define GX_MAX_ATTRS 24 /* the most of any schema (TreeEnsembleRegressor: 19) */
#define GX_MAX_OP_INPUTS 64

/* How the elements of a 4-D tensor lie in memory (ops/layout.h): plain
 * row-major over ONNX's logical [N, C, H, W], or one of the layouts the
 * compiler's layout pass may choose (seed 001). */
typedef enum gx_layout {
    GX_LAYOUT_PLAIN,    /* row-major logical shape: every value but those below */
    GX_LAYOUT_NHWC,     /* [N, H, W, C] */
    GX_LAYOUT_NCHW16C,  /* [N, C / 16, H, W, 16] */
    GX_LAYOUT_COUNT
} gx_layout;

/* A tensor as inference and kernels see it. During inference data is
 * non-NULL only for constants; in kernels it points into the job's arena
 * (or at a constant) and is GX_ALIGN-aligned. shape is the physical shape
 * of a value in another layout than plain (then layout says which). */
typedef struct gx_view {
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    int64_t numel;
    void *data;
    gx_layout layout;
    /* What the value is (include/gexec/tensor.h): a tensor (0, what every
     * kernel takes), a sequence (data: its gx_tensor, items owned by it) or
     * none (an optional without an element; data NULL). Only values of the
     * executor-run ops (GX_OPF_CONTROL) and the graph's inputs and outputs
     * may be other than tensors; they are always dynamic. */
    gx_kind kind;
} gx_view;

/* One attribute a schema accepts. Defaults: def_i for INT, def_f for FLOAT,
 * def_s for STRING; INTS/FLOATS/TENSOR default to empty (n == 0 / NULL). */
typedef struct gx_attr_spec {
    const char *name;
    gx_attr_type type;
    bool required;
    int64_t def_i;
    double def_f;
    const char *def_s;
} gx_attr_spec;

/* An attribute resolved against its spec: the graph's value or the default.
 * Pointers borrow from the graph node (or the spec), which outlives the plan. */
typedef struct gx_attrval {
    bool set; /* given in the graph */
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    size_t n;
    const gx_tensor *t;
    const gx_graph *g;
} gx_attrval;

/* Schema flags */
#define GX_OPF_ELEMENTWISE (1u << 0)   /* out[i] depends on in[i] only (after broadcast) */
#define GX_OPF_BATCH_COUPLED (1u << 1) /* mixes samples of a batch (seed 002 sync op) */
#define GX_OPF_SHAPE_ONLY (1u << 2)    /* moves bytes; any dtype */
#define GX_OPF_READS_SHAPES (1u << 3)  /* reads only its inputs' shapes (Shape, Size) */
#define GX_OPF_NO_FOLD (1u << 4)       /* never evaluated at compile time */
#define GX_OPF_CONTROL (1u << 5)       /* the executor runs it, no kernel: control flow
                                        * (subgraphs), sequence and optional ops */
#define GX_OPF_STRINGS (1u << 6)       /* takes or gives string tensors (docs/strings.md);
                                        * the compiler refuses strings to every other op */

/* infer's answer when an output shape depends on the value of an input that
 * is not known yet (gx_infer_value returned NULL). The compiler then leaves
 * the node to run time, where infer is called again with every input's data. */
#define GX_INFER_DYNAMIC 1

/* Everything shape inference sees for one node. in[i].data is non-NULL when
 * the value is known: constants and values folded from them at compile time,
 * everything at run time (see GX_INFER_DYNAMIC). Read values through
 * gx_infer_value, and only for inputs listed in the schema's value_inputs.
 * An omitted optional input has ndim == -1. infer fills out[i].dtype, ndim
 * and shape. */
typedef struct gx_infer {
    const gx_attrval *attr; /* indexed like the schema's attrs */
    int n_in;
    const gx_view *in;
    int n_out;
    gx_view *out;
    char *err; /* message on failure, without the node name (caller adds it) */
    size_t errlen;
} gx_infer;

/* Estimated work of one node, from its inferred shapes. */
typedef struct gx_cost {
    double flops;
    double bytes; /* bytes read + written */
} gx_cost;

/* Seed 002's replica split: can a batch be cut along axis 0 into slices
 * that run through the op independently? in_batched[i] says input i carries
 * the batch on its axis 0 (constants and other unbatched inputs do not);
 * in[] has dtypes and shapes (data where known, as in gx_infer), out[] the
 * inferred outputs. The rule returns true and sets out_batched[k] when
 * every output sample depends only on the same sample of the batched inputs
 * (out_batched[k] false: output k does not depend on the batch at all), or
 * false when the op mixes samples (a "synchronous" node: BatchNormalization
 * in training mode, a reduction over axis 0, a loss with a mean...). */
typedef struct gx_batch_ctx {
    const gx_attrval *attr;
    int n_in;
    const gx_view *in;
    const bool *in_batched;
    int n_out;
    const gx_view *out;
    bool *out_batched;
} gx_batch_ctx;

typedef struct gx_op_schema {
    int min_in, max_in;
    int min_out, max_out;
    const gx_attr_spec *attrs;
    int n_attrs;
    unsigned flags;
    /* Inputs whose values (not just shapes) infer reads: bit i for input i
     * (Reshape's shape, Slice's starts, TopK's k...). The compiler keys plans
     * on graph inputs that reach these, so their values are known. */
    uint64_t value_inputs;
    /* Check attribute values and input dtypes/shapes, set output dtypes and
     * shapes. Returns GX_OK, GX_INFER_DYNAMIC, or GX_ESHAPE / GX_EDTYPE /
     * GX_EATTR / GX_EUNSUPPORTED with a message in ic->err. */
    int (*infer)(gx_infer *ic);
    /* Cost estimate; called after a successful infer with outputs filled. */
    gx_cost (*cost)(const gx_infer *ic);
    /* Optional: bytes of scratch memory the kernel needs (gx_kargs.scratch),
     * after a successful infer. NULL: none. */
    size_t (*scratch)(const gx_infer *ic);
    /* Optional: how many shares (gx_kargs ith of nth) the kernel's work
     * splits into at most, after a successful infer; the others do
     * nothing (1: share 0 does it all). NULL: as many as it is given. */
    int (*shares)(const gx_infer *ic);
    /* Optional: the op's batch rule (gx_batch_ctx). NULL: elementwise ops
     * follow the broadcasting rule (gx_op_batch_separable), every other op
     * is taken to mix samples. */
    bool (*batch)(const gx_batch_ctx *bc);
} gx_op_schema;

/* Data of input i if its value is known (see gx_infer), else NULL. */
static inline const void *gx_infer_value(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0 ? ic->in[i].data : NULL;
}

/* Whether op keeps the samples of a batch apart (gx_batch_ctx): its
 * schema's batch rule, the broadcasting rule for elementwise ops, else
 * false. An op whose inputs are all unbatched always is, with unbatched
 * outputs. */
bool gx_op_batch_separable(gx_op op, const gx_batch_ctx *bc);

/* Schema of op; never NULL for op < GX_OP_COUNT. Static storage. */
const gx_op_schema *gx_op_schema_get(gx_op op);

/* The string rule (docs/strings.md): GX_OK when op may see the dtypes of
 * ic's inputs and outputs (after a successful infer), GX_EDTYPE with a
 * message in ic->err when a tensor among them is a string and op's schema
 * lacks GX_OPF_STRINGS. Ops the executor runs (GX_OPF_CONTROL) carry
 * strings as any value. */
int gx_op_check_strings(gx_op op, gx_infer *ic);

/* Resolve a node's attributes against the op's schema into out[n_attrs]:
 * unknown names, wrong types (an INT is accepted where a FLOAT is expected)
 * and missing required attributes are GX_EATTR with a message. */
int gx_op_resolve_attrs(gx_op op, const gx_node *node, gx_attrval *out, char *err,
                        size_t errlen);

/* What the shares of one run of a step hold in common, for kernels whose
 * shares cooperate (gx_kargs.coop): zero when the run's first share
 * starts. Shares may run at once on several threads or one after another
 * on one, so a share never waits for another to start: it claims units of
 * work from `next` and may wait only for units claimed before its own
 * (their claimers are running them), counted done in `done`. */
typedef struct gx_coop {
    _Atomic int64_t next, done;
} gx_coop;

/* Arguments of one kernel call. The kernel computes the share ith of nth
 * (0 <= ith < nth) of the node's work; with nth == 1 it does all of it.
 * Kernels never allocate and never fail: everything that could fail was
 * checked by infer. Outputs never overlap inputs. */
typedef struct gx_kargs {
    const gx_attrval *attr;
    int n_in;
    const gx_view *in;
    int n_out;
    const gx_view *out;
    void *scratch; /* the schema's scratch() bytes, GX_ALIGN-aligned; else NULL */
    int ith, nth;
    gx_coop *coop; /* with nth > 1 in the executors, the run's gx_coop; else NULL */
    void *queue; /* the device's queue (stream) for this worker; NULL on the CPU */
    /* The job's string heap, where kernels that make strings put them
     * (docs/strings.md); NULL where no step makes strings (folding). A
     * full heap gives "" and fails the job after the step. */
    gx_strheap *strs;
} gx_kargs;

typedef void (*gx_kernel_fn)(const gx_kargs *k);

/* CPU kernel of op; NULL only for the executor-run ops (GX_OPF_CONTROL). */
gx_kernel_fn gx_cpu_kernel(gx_op op);

/* numpy broadcasting of two shapes into out; false if incompatible. */
bool gx_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                        int64_t *out);

#endif
