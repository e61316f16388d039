/*
 * Schemas of the logic family (GX_OPS_LOGIC in ops/op.h): comparisons and
 * boolean ops with numpy broadcasting, Where, IsNaN/IsInf, Cast/CastLike,
 * BitShift, BitwiseAnd/Or/Xor/Not (opset 18), and the index-producing or
 * index-driven ops CumSum, Trilu, OneHot, Range, EyeLike, NonZero and
 * Compress.
 */
#include <math.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/schema.h"

/* ---- dtype classes ---- */

#define S_BIT(dt) (1u << (dt))
#define S_FLOATS (S_BIT(GX_F32) | S_BIT(GX_F64) | S_BIT(GX_F16) | S_BIT(GX_BF16))
#define S_SINTS (S_BIT(GX_I8) | S_BIT(GX_I16) | S_BIT(GX_I32) | S_BIT(GX_I64))
#define S_UINTS (S_BIT(GX_U8) | S_BIT(GX_U16) | S_BIT(GX_U32) | S_BIT(GX_U64))
#define S_NUMERIC (S_FLOATS | S_SINTS | S_UINTS)
#define S_PLAIN (S_NUMERIC | S_BIT(GX_BOOL))
#define S_ANY (S_PLAIN | S_BIT(GX_STRING)) /* strings: only GX_OPF_STRINGS ops */
_Static_assert(S_ANY == (1u << GX_DTYPE_COUNT) - 1, "every dtype is in a class");

static const char *s_dtname(gx_dtype dt)
{
    const char *n = gx_dtype_name(dt);
    return n ? n : "unknown dtype";
}

/* Input i is present and its dtype is in mask; expected says which dtypes
 * those are, for the message. */
static int s_need_dtype(gx_infer *ic, const char *op, int i, unsigned mask, const char *expected)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    if ((unsigned)ic->in[i].dtype >= GX_DTYPE_COUNT || !(mask & S_BIT(ic->in[i].dtype)))
        return gx_infer_errf(ic, GX_EDTYPE, "%s: input %d is %s, expected %s", op, i,
                             s_dtname(ic->in[i].dtype), expected);
    return GX_OK;
}

/* Inputs a and b have one dtype. */
static int s_need_same_dtype(gx_infer *ic, const char *op, int a, int b)
{
    if (ic->in[a].dtype != ic->in[b].dtype)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: inputs %d and %d are %s and %s, expected one dtype",
                             op, a, b, s_dtname(ic->in[a].dtype), s_dtname(ic->in[b].dtype));
    return GX_OK;
}

/* Input i holds exactly one element, as a scalar or a 1-element 1-D tensor
 * (ONNX asks for scalars, exporters often write [1]). */
static int s_need_scalar(gx_infer *ic, const char *op, int i, const char *what)
{
    const gx_view *v = &ic->in[i];
    if (v->ndim > 1 || gx_view_numel(v) != 1) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s (input %d) has shape %s, expected a scalar",
                             op, what, i, gx_shape_str(v->ndim, v->shape, s, sizeof s));
    }
    return GX_OK;
}

/* Element i of v as a double (integers beyond 2^53 round). */
static double s_elem_f64(const gx_view *v, int64_t i)
{
    const void *p = v->data;
    switch (v->dtype) {
    case GX_F32:
        return ((const float *)p)[i];
    case GX_F64:
        return ((const double *)p)[i];
    case GX_F16: {
        /* decoded here: the schemas do not include the kernels' ops/cpu/cpu.h */
        uint16_t h = ((const uint16_t *)p)[i];
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double mag = e == 0x1f ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        return h & 0x8000 ? -mag : mag;
    }
    case GX_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case GX_I8:
        return ((const int8_t *)p)[i];
    case GX_I16:
        return ((const int16_t *)p)[i];
    case GX_I32:
        return ((const int32_t *)p)[i];
    case GX_I64:
        return (double)((const int64_t *)p)[i];
    case GX_U8:
    case GX_BOOL:
        return ((const uint8_t *)p)[i];
    case GX_U16:
        return ((const uint16_t *)p)[i];
    case GX_U32:
        return ((const uint32_t *)p)[i];
    case GX_U64:
        return (double)((const uint64_t *)p)[i];
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    return NAN;
}

/* Element i of v as an int64: integers exactly, floats truncated toward
 * zero (ONNX casts such indices to int64). false when the value has no
 * int64 (NaN, infinite, out of range). */
static bool s_elem_i64(const gx_view *v, int64_t i, int64_t *out)
{
    switch (v->dtype) {
    case GX_I64:
        *out = ((const int64_t *)v->data)[i];
        return true;
    case GX_U64: {
        uint64_t u = ((const uint64_t *)v->data)[i];
        *out = (int64_t)u;
        return u <= INT64_MAX;
    }
    case GX_F32:
    case GX_F64:
    case GX_F16:
    case GX_BF16:
    case GX_I8:
    case GX_I16:
    case GX_I32:
    case GX_U8:
    case GX_U16:
    case GX_U32:
    case GX_BOOL:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    double d = s_elem_f64(v, i);
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
        return false;
    *out = (int64_t)d;
    return true;
}

uint64_t gx_nonzero_bits(gx_dtype dt)
{
    switch (dt) {
    case GX_F32:
        return 0x7fffffffu;
    case GX_F64:
        return 0x7fffffffffffffffu;
    case GX_F16:
    case GX_BF16:
        return 0x7fffu;
    case GX_I8:
    case GX_I16:
    case GX_I32:
    case GX_I64:
    case GX_U8:
    case GX_U16:
    case GX_U32:
    case GX_U64:
    case GX_BOOL:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    return UINT64_MAX;
}

/* Nonzero elements of v (its data must be known). */
static int64_t s_count_nonzero(const gx_view *v)
{
    const size_t es = gx_dtype_size(v->dtype);
    const uint64_t mask = gx_nonzero_bits(v->dtype);
    int64_t n = 0;
    for (int64_t i = 0; i < v->numel; i++) {
        uint64_t bits = es == 1   ? ((const uint8_t *)v->data)[i]
                        : es == 2 ? ((const uint16_t *)v->data)[i]
                        : es == 4 ? ((const uint32_t *)v->data)[i]
                                  : ((const uint64_t *)v->data)[i];
        n += (bits & mask) != 0;
    }
    return n;
}

/* The dtype of an ONNX TensorProto.DataType code (Cast's to, EyeLike's
 * dtype). GX_EDTYPE for ONNX types gexec lacks, GX_EATTR for other codes. */
static int s_onnx_dtype(gx_infer *ic, const char *op, const char *attr, int64_t code,
                        gx_dtype *dt)
{
    static const struct {
        const char *name;
        int dt; /* -1: no gexec dtype */
    } onnx[] = {
        [1] = {"FLOAT", GX_F32},         [2] = {"UINT8", GX_U8},
        [3] = {"INT8", GX_I8},           [4] = {"UINT16", GX_U16},
        [5] = {"INT16", GX_I16},         [6] = {"INT32", GX_I32},
        [7] = {"INT64", GX_I64},         [8] = {"STRING", GX_STRING},
        [9] = {"BOOL", GX_BOOL},         [10] = {"FLOAT16", GX_F16},
        [11] = {"DOUBLE", GX_F64},       [12] = {"UINT32", GX_U32},
        [13] = {"UINT64", GX_U64},       [14] = {"COMPLEX64", -1},
        [15] = {"COMPLEX128", -1},       [16] = {"BFLOAT16", GX_BF16},
        [17] = {"FLOAT8E4M3FN", -1},     [18] = {"FLOAT8E4M3FNUZ", -1},
        [19] = {"FLOAT8E5M2", -1},       [20] = {"FLOAT8E5M2FNUZ", -1},
        [21] = {"UINT4", -1},            [22] = {"INT4", -1},
        [23] = {"FLOAT4E2M1", -1},
    };
    if (code < 0 || code >= (int64_t)(sizeof onnx / sizeof onnx[0]) || !onnx[code].name)
        return gx_infer_errf(ic, GX_EATTR, "%s: %s=%lld is not an ONNX data type", op, attr,
                             (long long)code);
    if (onnx[code].dt < 0)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s=%lld (%s) is not supported", op, attr,
                             (long long)code, onnx[code].name);
    *dt = (gx_dtype)onnx[code].dt;
    return GX_OK;
}

bool gx_onnx_dtype(int64_t code, gx_dtype *dt)
{
    char msg[128];
    gx_infer ic = {.err = msg, .errlen = sizeof msg};
    return s_onnx_dtype(&ic, "", "", code, dt) == GX_OK;
}

/* Output shape = numpy broadcast of inputs first..first+n-1. */
static int s_bcast_shapes(gx_infer *ic, const char *op, int first, int n, int *nd,
                          int64_t *shape)
{
    const gx_view *v = &ic->in[first];
    *nd = v->ndim;
    memcpy(shape, v->shape, (size_t)v->ndim * sizeof shape[0]);
    for (int i = first + 1; i < first + n; i++) {
        v = &ic->in[i];
        if (!gx_broadcast_shape(*nd, shape, v->ndim, v->shape, nd, shape)) {
            char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE, "%s: shapes %s and %s are not broadcastable", op,
                                 gx_shape_str(*nd, shape, sa, sizeof sa),
                                 gx_shape_str(v->ndim, v->shape, sb, sizeof sb));
        }
    }
    return GX_OK;
}

/* Sets output 0 and fails when its element count overflows. */
static int s_set_out(gx_infer *ic, const char *op, gx_dtype dt, int ndim, const int64_t *shape)
{
    if (gx_shape_numel(ndim, shape, INT64_MAX) < 0) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: output shape %s is too large", op,
                             gx_shape_str(ndim, shape, s, sizeof s));
    }
    gx_view_set(&ic->out[0], dt, ndim, shape);
    return GX_OK;
}

/* Most ops here read and write each element once. */
static gx_cost s_cost_io(const gx_infer *ic)
{
    return (gx_cost){.flops = (double)gx_view_numel(&ic->out[0]), .bytes = gx_infer_io_bytes(ic)};
}

/* ---- comparisons, boolean ops, BitShift, Where ---- */

/* Two inputs of one dtype in mask, broadcast; the output is out_dt, or the
 * inputs' dtype when out_dt is GX_DTYPE_COUNT. */
static int s_infer_binary(gx_infer *ic, gx_op op, unsigned mask, const char *expected,
                          gx_dtype out_dt)
{
    const char *name = gx_op_name(op);
    int rc, nd;
    int64_t shape[GX_MAX_DIMS];
    if ((rc = s_need_dtype(ic, name, 0, mask, expected)) < 0 ||
        (rc = s_need_dtype(ic, name, 1, mask, expected)) < 0 ||
        (rc = s_need_same_dtype(ic, name, 0, 1)) < 0 ||
        (rc = s_bcast_shapes(ic, name, 0, 2, &nd, shape)) < 0)
        return rc;
    gx_view_set(&ic->out[0], out_dt == GX_DTYPE_COUNT ? ic->in[0].dtype : out_dt, nd, shape);
    return GX_OK;
}

#define S_BINARY_SCHEMA_F(E, MASK, EXPECTED, OUT_DT, FLAGS)                   \
    static int s_infer_##E(gx_infer *ic)                                      \
    {                                                                         \
        return s_infer_binary(ic, GX_OP_##E, MASK, EXPECTED, OUT_DT);         \
    }                                                                         \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                 \
        .flags = GX_OPF_ELEMENTWISE | (FLAGS), .infer = s_infer_##E, .cost = s_cost_io, \
    };
#define S_BINARY_SCHEMA(E, MASK, EXPECTED, OUT_DT) S_BINARY_SCHEMA_F(E, MASK, EXPECTED, OUT_DT, 0)

/* Comparisons take every numeric dtype and bool (ONNX leaves bool out of
 * the ordering ones; false < true is harmless); Equal strings too. */
S_BINARY_SCHEMA_F(EQUAL, S_ANY, "a gexec dtype", GX_BOOL, GX_OPF_STRINGS)
S_BINARY_SCHEMA(LESS, S_PLAIN, "a numeric or bool dtype", GX_BOOL)
S_BINARY_SCHEMA(GREATER, S_PLAIN, "a numeric or bool dtype", GX_BOOL)
S_BINARY_SCHEMA(LESS_OR_EQUAL, S_PLAIN, "a numeric or bool dtype", GX_BOOL)
S_BINARY_SCHEMA(GREATER_OR_EQUAL, S_PLAIN, "a numeric or bool dtype", GX_BOOL)
S_BINARY_SCHEMA(AND, S_BIT(GX_BOOL), "bool", GX_BOOL)
S_BINARY_SCHEMA(OR, S_BIT(GX_BOOL), "bool", GX_BOOL)
S_BINARY_SCHEMA(XOR, S_BIT(GX_BOOL), "bool", GX_BOOL)

/* BitwiseAnd, BitwiseOr, BitwiseXor (opset 18): integers of one dtype,
 * broadcast; the output is their dtype. */
#define S_INTS (S_SINTS | S_UINTS)
#define S_INTS_NAMES "int8, int16, int32, int64, uint8, uint16, uint32 or uint64"
S_BINARY_SCHEMA(BITWISE_AND, S_INTS, S_INTS_NAMES, GX_DTYPE_COUNT)
S_BINARY_SCHEMA(BITWISE_OR, S_INTS, S_INTS_NAMES, GX_DTYPE_COUNT)
S_BINARY_SCHEMA(BITWISE_XOR, S_INTS, S_INTS_NAMES, GX_DTYPE_COUNT)

/* BitwiseNot (opset 18): one integer input, same dtype and shape out. */
static int s_infer_bitwise_not(gx_infer *ic)
{
    int rc = s_need_dtype(ic, "BitwiseNot", 0, S_INTS, S_INTS_NAMES);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[0].dtype, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_BITWISE_NOT = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_bitwise_not, .cost = s_cost_io,
};

static const gx_attr_spec s_bit_shift_attrs[] = {
    [GX_BIT_SHIFT_DIRECTION] = {.name = "direction", .type = GX_ATTR_STRING, .required = true},
};
_Static_assert(sizeof s_bit_shift_attrs / sizeof s_bit_shift_attrs[0] == GX_BIT_SHIFT_NATTRS,
               "BitShift attrs");

/* BitShift: unsigned x shifted by y bits, LEFT or RIGHT; shifting by the
 * width or more gives 0. */
static int s_infer_bit_shift(gx_infer *ic)
{
    const char *dir = ic->attr[GX_BIT_SHIFT_DIRECTION].s;
    if (!dir || (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0))
        return gx_infer_errf(ic, GX_EATTR, "BitShift: direction '%s' is not LEFT or RIGHT",
                             dir ? dir : "");
    return s_infer_binary(ic, GX_OP_BIT_SHIFT, S_UINTS, "an unsigned integer type",
                          GX_DTYPE_COUNT);
}

const gx_op_schema gx_schema_BIT_SHIFT = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_bit_shift_attrs, .n_attrs = GX_BIT_SHIFT_NATTRS,
    .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_bit_shift, .cost = s_cost_io,
};

/* Where: bool condition, x and y of one (any) dtype, all three broadcast. */
static int s_infer_where(gx_infer *ic)
{
    int rc, nd;
    int64_t shape[GX_MAX_DIMS];
    if ((rc = s_need_dtype(ic, "Where", 0, S_BIT(GX_BOOL), "bool")) < 0 ||
        (rc = s_need_dtype(ic, "Where", 1, S_ANY, "a gexec dtype")) < 0 ||
        (rc = s_need_dtype(ic, "Where", 2, S_ANY, "a gexec dtype")) < 0 ||
        (rc = s_need_same_dtype(ic, "Where", 1, 2)) < 0 ||
        (rc = s_bcast_shapes(ic, "Where", 0, 3, &nd, shape)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[1].dtype, nd, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_WHERE = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_ELEMENTWISE | GX_OPF_STRINGS, .infer = s_infer_where, .cost = s_cost_io,
};

/* ---- unary tests: Not, IsNaN, IsInf ---- */

/* One input with a dtype in mask; a bool output of its shape. */
static int s_infer_test(gx_infer *ic, gx_op op, unsigned mask, const char *expected)
{
    int rc = s_need_dtype(ic, gx_op_name(op), 0, mask, expected);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_BOOL, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

static int s_infer_not(gx_infer *ic)
{
    return s_infer_test(ic, GX_OP_NOT, S_BIT(GX_BOOL), "bool");
}

static int s_infer_isnan(gx_infer *ic)
{
    return s_infer_test(ic, GX_OP_ISNAN, S_FLOATS, "a floating-point type");
}

static int s_infer_isinf(gx_infer *ic)
{
    return s_infer_test(ic, GX_OP_ISINF, S_FLOATS, "a floating-point type");
}

const gx_op_schema gx_schema_NOT = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_not, .cost = s_cost_io,
};

const gx_op_schema gx_schema_ISNAN = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_isnan, .cost = s_cost_io,
};

static const gx_attr_spec s_isinf_attrs[] = {
    [GX_ISINF_DETECT_NEGATIVE] = {.name = "detect_negative", .type = GX_ATTR_INT, .def_i = 1},
    [GX_ISINF_DETECT_POSITIVE] = {.name = "detect_positive", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_isinf_attrs / sizeof s_isinf_attrs[0] == GX_ISINF_NATTRS, "IsInf attrs");

const gx_op_schema gx_schema_ISINF = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_isinf_attrs, .n_attrs = GX_ISINF_NATTRS,
    .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_isinf, .cost = s_cost_io,
};

/* ---- Cast, CastLike ---- */

/* saturate (opset 19) only changes float8 targets, which gexec lacks: it
 * is accepted and has no effect. */
static const gx_attr_spec s_cast_attrs[] = {
    [GX_CAST_TO] = {.name = "to", .type = GX_ATTR_INT, .required = true},
    [GX_CAST_SATURATE] = {.name = "saturate", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_cast_attrs / sizeof s_cast_attrs[0] == GX_CAST_NATTRS, "Cast attrs");

static int s_infer_cast(gx_infer *ic)
{
    gx_dtype to;
    int rc;
    if ((rc = s_need_dtype(ic, "Cast", 0, S_ANY, "a gexec dtype")) < 0 ||
        (rc = s_onnx_dtype(ic, "Cast", "to", ic->attr[GX_CAST_TO].i, &to)) < 0)
        return rc;
    gx_view_set(&ic->out[0], to, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_CAST = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_cast_attrs, .n_attrs = GX_CAST_NATTRS,
    .flags = GX_OPF_ELEMENTWISE | GX_OPF_STRINGS, .infer = s_infer_cast, .cost = s_cost_io,
};

static const gx_attr_spec s_cast_like_attrs[] = {
    [GX_CAST_LIKE_SATURATE] = {.name = "saturate", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_cast_like_attrs / sizeof s_cast_like_attrs[0] == GX_CAST_LIKE_NATTRS,
               "CastLike attrs");

/* CastLike: Cast to the dtype of input 1 (only its dtype is read). */
static int s_infer_cast_like(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "CastLike", 0, S_ANY, "a gexec dtype")) < 0 ||
        (rc = s_need_dtype(ic, "CastLike", 1, S_ANY, "a gexec dtype")) < 0)
        return rc;
    gx_view_set(&ic->out[0], ic->in[1].dtype, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

/* Input 1's bytes are never read, so it does not count as traffic. */
static gx_cost s_cost_cast_like(const gx_infer *ic)
{
    double n = (double)gx_view_numel(&ic->out[0]);
    return (gx_cost){.flops = n, .bytes = gx_view_bytes(&ic->in[0]) + gx_view_bytes(&ic->out[0])};
}

/* Input 1 lends only its dtype: the output follows input 0. */
static bool s_batch_cast_like(const gx_batch_ctx *bc)
{
    if (!gx_batch_in(bc, 0))
        return true;
    if (bc->in[0].ndim < 1 || bc->out[0].ndim < 1 || bc->out[0].shape[0] != bc->in[0].shape[0])
        return false;
    bc->out_batched[0] = true;
    return true;
}

const gx_op_schema gx_schema_CAST_LIKE = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_cast_like_attrs, .n_attrs = GX_CAST_LIKE_NATTRS,
    .flags = GX_OPF_STRINGS, .infer = s_infer_cast_like, .cost = s_cost_cast_like,
    .batch = s_batch_cast_like,
};

/* ---- CumSum ---- */

static const gx_attr_spec s_cumsum_attrs[] = {
    [GX_CUMSUM_EXCLUSIVE] = {.name = "exclusive", .type = GX_ATTR_INT, .def_i = 0},
    [GX_CUMSUM_REVERSE] = {.name = "reverse", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_cumsum_attrs / sizeof s_cumsum_attrs[0] == GX_CUMSUM_NATTRS,
               "CumSum attrs");

/* CumSum: running sums of numeric x along the axis given by the int32 or
 * int64 scalar input 1. The axis does not change the shape, but it must be
 * in range before the kernel runs, so it is a value input. */
static int s_infer_cumsum(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "CumSum", 0, S_NUMERIC, "a numeric type")) < 0 ||
        (rc = s_need_dtype(ic, "CumSum", 1, S_BIT(GX_I32) | S_BIT(GX_I64), "int32 or int64")) < 0 ||
        (rc = s_need_scalar(ic, "CumSum", 1, "axis")) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    if (!gx_infer_value(ic, 1))
        return GX_INFER_DYNAMIC;
    int64_t axis;
    int ax;
    s_elem_i64(&ic->in[1], 0, &axis);
    if (!gx_axis_norm(axis, x->ndim, &ax))
        return gx_infer_errf(ic, GX_ESHAPE, "CumSum: axis %lld is out of range for rank %d",
                             (long long)axis, x->ndim);
    return GX_OK;
}

const gx_op_schema gx_schema_CUMSUM = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_cumsum_attrs, .n_attrs = GX_CUMSUM_NATTRS, .value_inputs = 1u << 1,
    .infer = s_infer_cumsum, .cost = s_cost_io,
};

/* ---- Trilu ---- */

static const gx_attr_spec s_trilu_attrs[] = {
    [GX_TRILU_UPPER] = {.name = "upper", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_trilu_attrs / sizeof s_trilu_attrs[0] == GX_TRILU_NATTRS, "Trilu attrs");

/* Trilu: keeps the upper (or lower) triangle of the last two dims from
 * diagonal k (optional int64 scalar input 1; any value is valid), zeroes the
 * rest. Any dtype. */
static int s_infer_trilu(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "Trilu", 0, S_PLAIN, "a numeric or bool dtype")) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2)
        return gx_infer_errf(ic, GX_ESHAPE, "Trilu: input has rank %d, expected at least 2",
                             x->ndim);
    if (ic->n_in > 1 && ic->in[1].ndim >= 0 &&
        ((rc = s_need_dtype(ic, "Trilu", 1, S_BIT(GX_I64), "int64")) < 0 ||
         (rc = s_need_scalar(ic, "Trilu", 1, "k")) < 0))
        return rc;
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_TRILU = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_trilu_attrs, .n_attrs = GX_TRILU_NATTRS,
    .infer = s_infer_trilu, .cost = s_cost_io,
};

/* ---- OneHot ---- */

static const gx_attr_spec s_one_hot_attrs[] = {
    [GX_ONE_HOT_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = -1},
};
_Static_assert(sizeof s_one_hot_attrs / sizeof s_one_hot_attrs[0] == GX_ONE_HOT_NATTRS,
               "OneHot attrs");

/* OneHot(indices, depth, values): numeric indices (floats truncated; -depth
 * .. -1 count from the end; others give an all-off row), a numeric scalar
 * depth > 0 whose value is the new dim inserted at axis, values = [off, on]
 * of the output's dtype. */
static int s_infer_one_hot(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "OneHot", 0, S_NUMERIC, "a numeric type")) < 0 ||
        (rc = s_need_dtype(ic, "OneHot", 1, S_NUMERIC, "a numeric type")) < 0 ||
        (rc = s_need_scalar(ic, "OneHot", 1, "depth")) < 0 ||
        (rc = s_need_dtype(ic, "OneHot", 2, S_PLAIN, "a numeric or bool dtype")) < 0)
        return rc;
    const gx_view *ind = &ic->in[0], *val = &ic->in[2];
    if (val->ndim != 1 || val->shape[0] != 2) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "OneHot: values has shape %s, expected [2]",
                             gx_shape_str(val->ndim, val->shape, s, sizeof s));
    }
    if (ind->ndim + 1 > GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "OneHot: output rank %d is above %d", ind->ndim + 1,
                             GX_MAX_DIMS);
    int ax;
    int64_t axis = ic->attr[GX_ONE_HOT_AXIS].i;
    if (!gx_axis_norm(axis, ind->ndim + 1, &ax))
        return gx_infer_errf(ic, GX_EATTR, "OneHot: axis %lld is out of range for output rank %d",
                             (long long)axis, ind->ndim + 1);
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0, s = 0; d <= ind->ndim; d++)
        shape[d] = d == ax ? 1 : ind->shape[s++];
    gx_view_set(&ic->out[0], val->dtype, ind->ndim + 1, shape);
    if (!gx_infer_value(ic, 1))
        return GX_INFER_DYNAMIC;
    int64_t depth;
    if (!s_elem_i64(&ic->in[1], 0, &depth) || depth <= 0)
        return gx_infer_errf(ic, GX_ESHAPE, "OneHot: depth %g is not a positive integer",
                             s_elem_f64(&ic->in[1], 0));
    shape[ax] = depth;
    return s_set_out(ic, "OneHot", val->dtype, ind->ndim + 1, shape);
}

const gx_op_schema gx_schema_ONE_HOT = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .attrs = s_one_hot_attrs, .n_attrs = GX_ONE_HOT_NATTRS, .value_inputs = 1u << 1,
    .infer = s_infer_one_hot, .cost = s_cost_io,
};

/* ---- Range ---- */

/* ceil(diff / step) for diff, step > 0, without overflow. */
static uint64_t s_ceil_div(uint64_t diff, uint64_t step)
{
    return diff / step + (diff % step != 0);
}

/* Elements of Range(start, limit, delta) for integer inputs, exactly: the
 * differences are taken as unsigned, where they cannot overflow. */
static int s_range_count_int(gx_infer *ic, int64_t *n)
{
    const gx_view *in = ic->in;
    uint64_t count;
    if (in[0].dtype == GX_U64) {
        uint64_t s = *(const uint64_t *)in[0].data, l = *(const uint64_t *)in[1].data,
                 d = *(const uint64_t *)in[2].data;
        if (d == 0)
            return gx_infer_errf(ic, GX_ESHAPE, "Range: delta is 0");
        count = l > s ? s_ceil_div(l - s, d) : 0;
    } else {
        int64_t s, l, d;
        s_elem_i64(&in[0], 0, &s);
        s_elem_i64(&in[1], 0, &l);
        s_elem_i64(&in[2], 0, &d);
        if (d == 0)
            return gx_infer_errf(ic, GX_ESHAPE, "Range: delta is 0");
        if (d > 0)
            count = l > s ? s_ceil_div((uint64_t)l - (uint64_t)s, (uint64_t)d) : 0;
        else /* -(d + 1) + 1 is |d| without negating INT64_MIN */
            count = l < s ? s_ceil_div((uint64_t)s - (uint64_t)l, (uint64_t)(-(d + 1)) + 1) : 0;
    }
    if (count > INT64_MAX)
        return gx_infer_errf(ic, GX_ESHAPE, "Range: %llu elements are too many",
                             (unsigned long long)count);
    *n = (int64_t)count;
    return GX_OK;
}

/* Range: a 1-D tensor start, start + delta, ... up to (excluding) limit, of
 * max(ceil((limit - start) / delta), 0) elements; three numeric scalars of
 * one dtype, all value inputs since they make the length. */
static int s_infer_range(gx_infer *ic)
{
    static const char *const what[] = {"start", "limit", "delta"};
    int rc;
    for (int i = 0; i < 3; i++) {
        if ((rc = s_need_dtype(ic, "Range", i, S_NUMERIC, "a numeric type")) < 0 ||
            (rc = s_need_scalar(ic, "Range", i, what[i])) < 0 ||
            (i > 0 && (rc = s_need_same_dtype(ic, "Range", 0, i)) < 0))
            return rc;
    }
    const gx_dtype dt = ic->in[0].dtype;
    gx_view_set(&ic->out[0], dt, 1, (int64_t[]){0});
    if (!gx_infer_value(ic, 0) || !gx_infer_value(ic, 1) || !gx_infer_value(ic, 2))
        return GX_INFER_DYNAMIC;
    int64_t n = 0;
    if (S_BIT(dt) & S_FLOATS) {
        double s = s_elem_f64(&ic->in[0], 0), l = s_elem_f64(&ic->in[1], 0),
               d = s_elem_f64(&ic->in[2], 0);
        if (d == 0)
            return gx_infer_errf(ic, GX_ESHAPE, "Range: delta is 0");
        double c = ceil((l - s) / d);
        if (!(c < 9223372036854775808.0)) /* also NaN and infinities */
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "Range: start %g, limit %g, delta %g do not give a length", s, l,
                                 d);
        n = c > 0 ? (int64_t)c : 0;
    } else if ((rc = s_range_count_int(ic, &n)) < 0) {
        return rc;
    }
    return s_set_out(ic, "Range", dt, 1, (int64_t[]){n});
}

/* Writes the output, reads three scalars. */
static gx_cost s_cost_range(const gx_infer *ic)
{
    return (gx_cost){.flops = 2.0 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_view_bytes(&ic->out[0])};
}

const gx_op_schema gx_schema_RANGE = {
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .value_inputs = 7u, .infer = s_infer_range, .cost = s_cost_range,
};

/* ---- EyeLike ---- */

static const gx_attr_spec s_eye_like_attrs[] = {
    [GX_EYE_LIKE_DTYPE] = {.name = "dtype", .type = GX_ATTR_INT},
    [GX_EYE_LIKE_K] = {.name = "k", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_eye_like_attrs / sizeof s_eye_like_attrs[0] == GX_EYE_LIKE_NATTRS,
               "EyeLike attrs");

/* EyeLike: a 2-D tensor of the input's shape, ones on diagonal k (any k;
 * off the matrix gives all zeros), of dtype (ONNX code) or the input's. */
static int s_infer_eye_like(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "EyeLike", 0, S_PLAIN, "a numeric or bool dtype")) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim != 2)
        return gx_infer_errf(ic, GX_ESHAPE, "EyeLike: input has rank %d, expected 2", x->ndim);
    gx_dtype dt = x->dtype;
    if (ic->attr[GX_EYE_LIKE_DTYPE].set &&
        (rc = s_onnx_dtype(ic, "EyeLike", "dtype", ic->attr[GX_EYE_LIKE_DTYPE].i, &dt)) < 0)
        return rc;
    gx_view_set(&ic->out[0], dt, 2, x->shape);
    return GX_OK;
}

/* Writes the output only: the input's values are never read. */
static gx_cost s_cost_eye_like(const gx_infer *ic)
{
    return (gx_cost){.flops = 0, .bytes = gx_view_bytes(&ic->out[0])};
}

const gx_op_schema gx_schema_EYE_LIKE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .attrs = s_eye_like_attrs, .n_attrs = GX_EYE_LIKE_NATTRS,
    .flags = GX_OPF_READS_SHAPES, .infer = s_infer_eye_like, .cost = s_cost_eye_like,
};

/* ---- NonZero, Compress: shapes from data ---- */

/* NonZero: int64 [rank, n] indices of the n nonzero elements in row-major
 * order; a scalar counts as shape [1] (numpy's atleast_1d). The count needs
 * the data, so input 0 is a value input. */
static int s_infer_nonzero(gx_infer *ic)
{
    int rc = s_need_dtype(ic, "NonZero", 0, S_PLAIN, "a numeric or bool dtype");
    if (rc < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    int64_t shape[2] = {x->ndim > 0 ? x->ndim : 1, 0};
    gx_view_set(&ic->out[0], GX_I64, 2, shape);
    if (!gx_infer_value(ic, 0))
        return GX_INFER_DYNAMIC;
    shape[1] = s_count_nonzero(x);
    gx_view_set(&ic->out[0], GX_I64, 2, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_NONZERO = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .value_inputs = 1u << 0, .infer = s_infer_nonzero, .cost = s_cost_io,
};

static const gx_attr_spec s_compress_attrs[] = {
    [GX_COMPRESS_AXIS] = {.name = "axis", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_compress_attrs / sizeof s_compress_attrs[0] == GX_COMPRESS_NATTRS,
               "Compress attrs");

/* Compress: the slices along axis (or, without axis, the elements of the
 * flattened input) whose entry in the 1-D bool condition is true; a
 * condition shorter than that dim drops the rest, a longer one is refused.
 * The condition's values make the shape: a value input. */
static int s_infer_compress(gx_infer *ic)
{
    int rc;
    if ((rc = s_need_dtype(ic, "Compress", 0, S_ANY, "a gexec dtype")) < 0 ||
        (rc = s_need_dtype(ic, "Compress", 1, S_BIT(GX_BOOL), "bool")) < 0)
        return rc;
    const gx_view *x = &ic->in[0], *c = &ic->in[1];
    if (c->ndim != 1)
        return gx_infer_errf(ic, GX_ESHAPE, "Compress: condition has rank %d, expected 1",
                             c->ndim);
    int ax = -1, nd = 1;
    int64_t shape[GX_MAX_DIMS], len = gx_view_numel(x);
    if (ic->attr[GX_COMPRESS_AXIS].set) {
        int64_t axis = ic->attr[GX_COMPRESS_AXIS].i;
        if (!gx_axis_norm(axis, x->ndim, &ax))
            return gx_infer_errf(ic, GX_EATTR, "Compress: axis %lld is out of range for rank %d",
                                 (long long)axis, x->ndim);
        nd = x->ndim;
        memcpy(shape, x->shape, (size_t)nd * sizeof shape[0]);
        len = x->shape[ax];
    }
    if (c->shape[0] > len)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "Compress: condition has %lld entries, more than the %lld %s",
                             (long long)c->shape[0], (long long)len,
                             ax >= 0 ? "slices along axis" : "input elements");
    shape[ax >= 0 ? ax : 0] = 0;
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    if (!gx_infer_value(ic, 1))
        return GX_INFER_DYNAMIC;
    shape[ax >= 0 ? ax : 0] = s_count_nonzero(c);
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_COMPRESS = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_compress_attrs, .n_attrs = GX_COMPRESS_NATTRS, .value_inputs = 1u << 1,
    .flags = GX_OPF_STRINGS, .infer = s_infer_compress, .cost = s_cost_io,
};
