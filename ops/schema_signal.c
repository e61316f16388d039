/*
 * Schemas of the signal family (GX_OPS_SIGNAL in ops/op.h): the window
 * generators HannWindow, HammingWindow and BlackmanWindow, the Fourier
 * transforms DFT and STFT (opset 17 forms) and MelWeightMatrix. Every size
 * comes from an input's value (window size, dft_length, frame_step...), so
 * those inputs are value inputs and infer answers GX_INFER_DYNAMIC until
 * they are known.
 */
#include <math.h>

#include "ops/schema.h"

#define S_BIT(dt) (1u << (dt))
#define S_INTS (S_BIT(GX_I32) | S_BIT(GX_I64))
#define S_REALS (S_BIT(GX_F32) | S_BIT(GX_F64))

/* Input i is present, has a dtype in mask and holds one element (a scalar
 * or a 1-element 1-D tensor, which exporters often write). */
static int s_need_scalar(gx_infer *ic, const char *op, int i, const char *what, unsigned mask)
{
    int rc = gx_infer_need_dtypes(ic, op, i, mask);
    if (rc < 0)
        return rc;
    const gx_view *v = &ic->in[i];
    if (v->ndim > 1 || gx_view_numel(v) != 1) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s (input %d) has shape %s, expected a scalar",
                             op, what, i, gx_shape_str(v->ndim, v->shape, s, sizeof s));
    }
    return GX_OK;
}

/* The value of an int32/int64 scalar input whose data is known. */
static int64_t s_int_value(const gx_view *v)
{
    return v->dtype == GX_I32 ? ((const int32_t *)v->data)[0] : ((const int64_t *)v->data)[0];
}

/* The value of a float32/float64 scalar input whose data is known. */
static double s_real_value(const gx_view *v)
{
    return v->dtype == GX_F32 ? ((const float *)v->data)[0] : ((const double *)v->data)[0];
}

/* The output dtype an output_datatype attribute (an ONNX TensorProto code)
 * names: FLOAT (1) or DOUBLE (11); the other ONNX codes are refused. */
static int s_output_dtype(gx_infer *ic, const char *op, int64_t code, gx_dtype *dt)
{
    if (code == 1 || code == 11) {
        *dt = code == 1 ? GX_F32 : GX_F64;
        return GX_OK;
    }
    return gx_infer_errf(ic, GX_EDTYPE,
                         "%s: output_datatype=%lld is not supported (1 float or 11 double)", op,
                         (long long)code);
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

/* ---- HannWindow, HammingWindow, BlackmanWindow ---- */

static const gx_attr_spec s_window_attrs[] = {
    [GX_WINDOW_OUTPUT_DATATYPE] = {.name = "output_datatype", .type = GX_ATTR_INT, .def_i = 1},
    [GX_WINDOW_PERIODIC] = {.name = "periodic", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_window_attrs / sizeof s_window_attrs[0] == GX_WINDOW_NATTRS,
               "window attrs");

/* A 1-D window of size (an int scalar, a value input) elements. */
static int s_infer_window_op(gx_infer *ic, gx_op o)
{
    const char *op = gx_op_name(o);
    gx_dtype dt = GX_F32;
    int rc;
    if ((rc = s_need_scalar(ic, op, 0, "size", S_INTS)) < 0 ||
        (rc = s_output_dtype(ic, op, ic->attr[GX_WINDOW_OUTPUT_DATATYPE].i, &dt)) < 0)
        return rc;
    int64_t periodic = ic->attr[GX_WINDOW_PERIODIC].i;
    if (periodic != 0 && periodic != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: periodic=%lld, expected 0 or 1", op,
                             (long long)periodic);
    gx_view_set(&ic->out[0], dt, 1, (int64_t[]){0});
    if (!gx_infer_value(ic, 0))
        return GX_INFER_DYNAMIC;
    int64_t n = s_int_value(&ic->in[0]);
    if (n < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: size %lld is negative", op, (long long)n);
    return s_set_out(ic, op, dt, 1, (int64_t[]){n});
}

/* A few cosines per element. */
static gx_cost s_cost_window(const gx_infer *ic)
{
    return (gx_cost){.flops = 10.0 * (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_view_bytes(&ic->out[0])};
}

#define S_WINDOW_SCHEMA(E)                                                    \
    static int s_infer_##E(gx_infer *ic) { return s_infer_window_op(ic, GX_OP_##E); } \
    const gx_op_schema gx_schema_##E = {                                      \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                 \
        .attrs = s_window_attrs, .n_attrs = GX_WINDOW_NATTRS,                 \
        .value_inputs = 1u << 0, .infer = s_infer_##E, .cost = s_cost_window, \
    };

S_WINDOW_SCHEMA(HANN_WINDOW)
S_WINDOW_SCHEMA(HAMMING_WINDOW)
S_WINDOW_SCHEMA(BLACKMAN_WINDOW)

/* ---- DFT (opset 17: axis an attribute, dft_length optional input 1) ---- */

static const gx_attr_spec s_dft_attrs[] = {
    [GX_DFT_AXIS] = {.name = "axis", .type = GX_ATTR_INT, .def_i = 1},
    [GX_DFT_INVERSE] = {.name = "inverse", .type = GX_ATTR_INT, .def_i = 0},
    [GX_DFT_ONESIDED] = {.name = "onesided", .type = GX_ATTR_INT, .def_i = 0},
};
_Static_assert(sizeof s_dft_attrs / sizeof s_dft_attrs[0] == GX_DFT_NATTRS, "DFT attrs");

/* The input is [..., n, ..., 1 or 2]: real, or complex as (re, im) pairs;
 * the output has the same dims but 2 last and, along axis, dft_length (the
 * signal is zero-padded or cut to it; n without it) or, onesided, its
 * dft_length / 2 + 1 unique bins. axis may not name the last dim. */
static int s_infer_dft(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, "DFT", 0, S_BIT(GX_F32))) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim < 2 || (x->shape[x->ndim - 1] != 1 && x->shape[x->ndim - 1] != 2)) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "DFT: input shape %s, expected [..., 1 or 2]",
                             gx_shape_str(x->ndim, x->shape, s, sizeof s));
    }
    const int64_t axis = ic->attr[GX_DFT_AXIS].i, inverse = ic->attr[GX_DFT_INVERSE].i,
                  onesided = ic->attr[GX_DFT_ONESIDED].i;
    int ax;
    if (!gx_axis_norm(axis, x->ndim, &ax) || ax == x->ndim - 1)
        return gx_infer_errf(ic, GX_EATTR, "DFT: axis %lld is out of range for rank %d",
                             (long long)axis, x->ndim);
    if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
        return gx_infer_errf(ic, GX_EATTR, "DFT: inverse=%lld and onesided=%lld, expected 0 or 1",
                             (long long)inverse, (long long)onesided);
    if (inverse && onesided)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "DFT: onesided inverse is not supported");
    int64_t shape[GX_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->shape[d];
    shape[x->ndim - 1] = 2;
    int64_t len = x->shape[ax];
    const bool has_len = ic->n_in > 1 && ic->in[1].ndim >= 0;
    if (has_len) {
        if ((rc = s_need_scalar(ic, "DFT", 1, "dft_length", S_INTS)) < 0)
            return rc;
        gx_view_set(&ic->out[0], GX_F32, x->ndim, shape);
        if (!gx_infer_value(ic, 1))
            return GX_INFER_DYNAMIC;
        len = s_int_value(&ic->in[1]);
    }
    if (len < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "DFT: %s %lld, expected >= 1",
                             has_len ? "dft_length" : "signal length", (long long)len);
    shape[ax] = onesided ? len / 2 + 1 : len;
    return s_set_out(ic, "DFT", GX_F32, x->ndim, shape);
}

/* A direct transform: each output bin sums its line's dft_length terms. */
static gx_cost s_cost_dft(const gx_infer *ic)
{
    const gx_view *y = &ic->out[0];
    int ax;
    gx_axis_norm(ic->attr[GX_DFT_AXIS].i, y->ndim, &ax);
    const double len = gx_infer_value(ic, 1) ? (double)s_int_value(&ic->in[1])
                                             : (double)ic->in[0].shape[ax];
    return (gx_cost){.flops = 8.0 * len * (double)gx_view_numel(y) / 2,
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_DFT = {
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .attrs = s_dft_attrs, .n_attrs = GX_DFT_NATTRS, .value_inputs = 1u << 1,
    .infer = s_infer_dft, .cost = s_cost_dft,
};

/* ---- STFT (opset 17) ---- */

static const gx_attr_spec s_stft_attrs[] = {
    [GX_STFT_ONESIDED] = {.name = "onesided", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_stft_attrs / sizeof s_stft_attrs[0] == GX_STFT_NATTRS, "STFT attrs");

/* signal [batch, length, 1 or 2], frame_step (int scalar), optional window
 * [frame_length], optional frame_length (int scalar; the window's length
 * without it, and equal to it with both). The output is [batch, frames,
 * bins, 2] with frames = (length - frame_length) / frame_step + 1 and bins
 * frame_length, or frame_length / 2 + 1 onesided. frame_step and
 * frame_length are value inputs. */
static int s_infer_stft(gx_infer *ic)
{
    int rc;
    if ((rc = gx_infer_need_dtypes(ic, "STFT", 0, S_BIT(GX_F32))) < 0 ||
        (rc = s_need_scalar(ic, "STFT", 1, "frame_step", S_INTS)) < 0)
        return rc;
    const gx_view *x = &ic->in[0];
    if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2)) {
        char s[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE,
                             "STFT: signal shape %s, expected [batch, length, 1 or 2]",
                             gx_shape_str(x->ndim, x->shape, s, sizeof s));
    }
    const int64_t onesided = ic->attr[GX_STFT_ONESIDED].i;
    if (onesided != 0 && onesided != 1)
        return gx_infer_errf(ic, GX_EATTR, "STFT: onesided=%lld, expected 0 or 1",
                             (long long)onesided);
    const bool has_win = ic->n_in > 2 && ic->in[2].ndim >= 0,
               has_len = ic->n_in > 3 && ic->in[3].ndim >= 0;
    if (!has_win && !has_len)
        return gx_infer_errf(ic, GX_ESHAPE, "STFT: needs a window or a frame_length");
    if (has_win) {
        if ((rc = gx_infer_need_dtypes(ic, "STFT", 2, S_BIT(GX_F32))) < 0)
            return rc;
        if (ic->in[2].ndim != 1)
            return gx_infer_errf(ic, GX_ESHAPE, "STFT: window has rank %d, expected 1",
                                 ic->in[2].ndim);
    }
    if (has_len && (rc = s_need_scalar(ic, "STFT", 3, "frame_length", S_INTS)) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, 4, (int64_t[]){x->shape[0], 0, 0, 2});
    if (!gx_infer_value(ic, 1) || (has_len && !gx_infer_value(ic, 3)))
        return GX_INFER_DYNAMIC;
    const int64_t step = s_int_value(&ic->in[1]);
    const int64_t len = has_len ? s_int_value(&ic->in[3]) : ic->in[2].shape[0];
    if (step < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "STFT: frame_step %lld, expected >= 1",
                             (long long)step);
    if (len < 1 || len > x->shape[1])
        return gx_infer_errf(ic, GX_ESHAPE,
                             "STFT: frame_length %lld, expected 1 to the signal length %lld",
                             (long long)len, (long long)x->shape[1]);
    if (has_win && has_len && ic->in[2].shape[0] != len)
        return gx_infer_errf(ic, GX_ESHAPE, "STFT: window has %lld elements, frame_length %lld",
                             (long long)ic->in[2].shape[0], (long long)len);
    const int64_t frames = (x->shape[1] - len) / step + 1;
    return s_set_out(ic, "STFT", GX_F32, 4,
                     (int64_t[]){x->shape[0], frames, onesided ? len / 2 + 1 : len, 2});
}

/* Each output bin sums frame_length terms. */
static gx_cost s_cost_stft(const gx_infer *ic)
{
    const gx_view *y = &ic->out[0];
    const double len = gx_infer_value(ic, 3) ? (double)s_int_value(&ic->in[3])
                                             : (double)gx_view_numel(&ic->in[2]);
    return (gx_cost){.flops = 8.0 * len * (double)gx_view_numel(y) / 2,
                     .bytes = gx_infer_io_bytes(ic)};
}

const gx_op_schema gx_schema_STFT = {
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .attrs = s_stft_attrs, .n_attrs = GX_STFT_NATTRS, .value_inputs = (1u << 1) | (1u << 3),
    .infer = s_infer_stft, .cost = s_cost_stft,
};

/* ---- MelWeightMatrix ---- */

static const gx_attr_spec s_mel_attrs[] = {
    [GX_MEL_WEIGHT_MATRIX_OUTPUT_DATATYPE] = {.name = "output_datatype", .type = GX_ATTR_INT,
                                              .def_i = 1},
};
_Static_assert(sizeof s_mel_attrs / sizeof s_mel_attrs[0] == GX_MEL_WEIGHT_MATRIX_NATTRS,
               "MelWeightMatrix attrs");

/* num_mel_bins, dft_length, sample_rate (int scalars), lower_edge_hertz,
 * upper_edge_hertz (float scalars) give a [dft_length / 2 + 1, num_mel_bins]
 * matrix. All five are value inputs: the first two make the shape and infer
 * checks the others, so that the kernel has nothing left to refuse. */
static int s_infer_mel(gx_infer *ic)
{
    static const char *const what[] = {"num_mel_bins", "dft_length", "sample_rate",
                                       "lower_edge_hertz", "upper_edge_hertz"};
    const char *op = "MelWeightMatrix";
    gx_dtype dt = GX_F32;
    int rc;
    for (int i = 0; i < 5; i++)
        if ((rc = s_need_scalar(ic, op, i, what[i], i < 3 ? S_INTS : S_REALS)) < 0)
            return rc;
    if ((rc = s_output_dtype(ic, op, ic->attr[GX_MEL_WEIGHT_MATRIX_OUTPUT_DATATYPE].i, &dt)) < 0)
        return rc;
    gx_view_set(&ic->out[0], dt, 2, (int64_t[]){0, 0});
    for (int i = 0; i < 5; i++)
        if (!gx_infer_value(ic, i))
            return GX_INFER_DYNAMIC;
    const int64_t bins = s_int_value(&ic->in[0]), len = s_int_value(&ic->in[1]),
                  rate = s_int_value(&ic->in[2]);
    const double lo = s_real_value(&ic->in[3]), hi = s_real_value(&ic->in[4]);
    if (bins < 1 || len < 1 || rate < 1)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: num_mel_bins %lld, dft_length %lld, sample_rate %lld, "
                             "expected >= 1",
                             op, (long long)bins, (long long)len, (long long)rate);
    if (!(lo >= 0 && lo <= hi && hi <= rate / 2.0))
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: edges %g to %g Hz, expected 0 <= lower <= upper <= %g "
                             "(half the sample rate)",
                             op, lo, hi, rate / 2.0);
    return s_set_out(ic, op, dt, 2, (int64_t[]){len / 2 + 1, bins});
}

/* Writes the output. */
static gx_cost s_cost_mel(const gx_infer *ic)
{
    return (gx_cost){.flops = (double)gx_view_numel(&ic->out[0]),
                     .bytes = gx_view_bytes(&ic->out[0])};
}

const gx_op_schema gx_schema_MEL_WEIGHT_MATRIX = {
    .min_in = 5, .max_in = 5, .min_out = 1, .max_out = 1,
    .attrs = s_mel_attrs, .n_attrs = GX_MEL_WEIGHT_MATRIX_NATTRS, .value_inputs = 0x1fu,
    .infer = s_infer_mel, .cost = s_cost_mel,
};
