/*
 * Schemas of the ai.onnx.ml ops (GX_OPS_ML in ops/op.h), as the ONNX ML
 * operator spec defines them and, where it is silent (binary classifiers,
 * post transforms of one score), as ONNX Runtime runs them. The numeric
 * input X of every model op is float32, float64, int64 or int32, [C] (one
 * row) or [N, C]; scores are float32. Attributes are ONNX's; the importer
 * (libclient/onnx.c) turns the older opsets' forms into these.
 *
 *   LabelEncoder           keys -> values (strings, int64, float32), opsets 1, 2, 4
 *   Scaler                 (x - offset) * scale
 *   Normalizer             rows divided by their MAX, L1 or L2 norm
 *   Binarizer              x > threshold ? 1 : 0
 *   Imputer                replaced_value (or NaN) -> imputed_value per column
 *   ArrayFeatureExtractor  X[..., Y] (any dtype)
 *   OneHotEncoder          X -> X.shape + [categories] of 0 and 1
 *   FeatureVectorizer      inputs' columns side by side, each cut or padded to its size
 *   LinearRegressor        X coefficients^T + intercepts
 *   LinearClassifier       the same, then the best class's label
 *   TreeEnsembleRegressor / TreeEnsembleClassifier  ensembles of decision trees (1, 3)
 *   TreeEnsemble           the same in opset 5's form: targets only, float or double
 *   SVMRegressor / SVMClassifier  support vector machines (or liblinear's linear ones)
 *   CategoryMapper         strings <-> int64 by two parallel lists
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/schema.h"

static const char *const s_transforms[] = {
    [GX_ML_NONE] = "NONE", [GX_ML_LOGISTIC] = "LOGISTIC", [GX_ML_SOFTMAX] = "SOFTMAX",
    [GX_ML_SOFTMAX_ZERO] = "SOFTMAX_ZERO", [GX_ML_PROBIT] = "PROBIT",
};

int gx_ml_transform(const char *s)
{
    for (int i = 0; i < (int)(sizeof s_transforms / sizeof s_transforms[0]); i++)
        if (strcmp(s, s_transforms[i]) == 0)
            return i;
    return -1;
}

static bool s_numeric(gx_dtype dt)
{
    return dt == GX_F32 || dt == GX_F64 || dt == GX_I64 || dt == GX_I32;
}

/* Input 0 of op is a numeric tensor [C] or [N, C]: rows n and columns c. */
static int s_rows(gx_infer *ic, const char *op, int64_t *n, int64_t *c)
{
    const gx_view *x = &ic->in[0];
    if (!s_numeric(x->dtype) || x->kind != GX_KIND_TENSOR)
        return gx_infer_errf(ic, GX_EDTYPE,
                             "%s: input is %s; float32, float64, int64 or int32 needed", op,
                             gx_dtype_name(x->dtype));
    if (x->ndim != 1 && x->ndim != 2) {
        char sh[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input has shape %s; [C] or [N, C] needed", op,
                             gx_shape_str(x->ndim, x->shape, sh, sizeof sh));
    }
    *n = x->ndim == 1 ? 1 : x->shape[0];
    *c = x->shape[x->ndim - 1];
    return GX_OK;
}

static int s_transform_attr(gx_infer *ic, const char *op, int a)
{
    const char *t = ic->attr[a].s;
    if (gx_ml_transform(t) < 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: post_transform \"%s\" is not NONE, LOGISTIC, SOFTMAX, "
                             "SOFTMAX_ZERO or PROBIT",
                             op, t);
    return GX_OK;
}

/* A STRINGS attribute (1-D string tensor) or NULL; false if set and not that. */
static bool s_strings_ok(const gx_tensor *t)
{
    return !t || (gx_tensor_dtype(t) == GX_STRING && gx_tensor_ndim(t) == 1);
}

static gx_cost s_cost_io(const gx_infer *ic)
{
    double n = 0;
    for (int i = 0; i < ic->n_in; i++)
        n += (double)gx_view_numel(&ic->in[i]);
    for (int i = 0; i < ic->n_out; i++)
        n += (double)gx_view_numel(&ic->out[i]);
    return (gx_cost){.flops = 4 * n, .bytes = gx_infer_io_bytes(ic)};
}

/* Rows are independent: a batch of [N, C] splits along N. */
static bool s_batch_rows(const gx_batch_ctx *bc)
{
    for (int k = 0; k < bc->n_out; k++)
        bc->out_batched[k] = bc->in_batched[0];
    return !bc->in_batched[0] || bc->in[0].ndim == 2;
}

/* ---- LabelEncoder ---- */

static const gx_attr_spec s_labenc_attrs[] = {
    [GX_LABENC_CLASSES_STRINGS] = {.name = "classes_strings", .type = GX_ATTR_TENSOR},
    [GX_LABENC_DEFAULT_FLOAT] = {.name = "default_float", .type = GX_ATTR_FLOAT, .def_f = -0.0},
    [GX_LABENC_DEFAULT_INT64] = {.name = "default_int64", .type = GX_ATTR_INT, .def_i = -1},
    [GX_LABENC_DEFAULT_STRING] = {.name = "default_string", .type = GX_ATTR_STRING,
                                  .def_s = "_Unused"},
    [GX_LABENC_DEFAULT_TENSOR] = {.name = "default_tensor", .type = GX_ATTR_TENSOR},
    [GX_LABENC_KEYS_FLOATS] = {.name = "keys_floats", .type = GX_ATTR_FLOATS},
    [GX_LABENC_KEYS_INT64S] = {.name = "keys_int64s", .type = GX_ATTR_INTS},
    [GX_LABENC_KEYS_STRINGS] = {.name = "keys_strings", .type = GX_ATTR_TENSOR},
    [GX_LABENC_KEYS_TENSOR] = {.name = "keys_tensor", .type = GX_ATTR_TENSOR},
    [GX_LABENC_VALUES_FLOATS] = {.name = "values_floats", .type = GX_ATTR_FLOATS},
    [GX_LABENC_VALUES_INT64S] = {.name = "values_int64s", .type = GX_ATTR_INTS},
    [GX_LABENC_VALUES_STRINGS] = {.name = "values_strings", .type = GX_ATTR_TENSOR},
    [GX_LABENC_VALUES_TENSOR] = {.name = "values_tensor", .type = GX_ATTR_TENSOR},
};
_Static_assert(sizeof s_labenc_attrs / sizeof s_labenc_attrs[0] == GX_LABENC_NATTRS,
               "LabelEncoder attrs");

int gx_labenc_side(const gx_attrval *a, bool values, gx_labenc_list *out)
{
    const int t = values ? GX_LABENC_VALUES_TENSOR : GX_LABENC_KEYS_TENSOR;
    const int f = values ? GX_LABENC_VALUES_FLOATS : GX_LABENC_KEYS_FLOATS;
    const int i = values ? GX_LABENC_VALUES_INT64S : GX_LABENC_KEYS_INT64S;
    const int s = values ? GX_LABENC_VALUES_STRINGS : GX_LABENC_KEYS_STRINGS;
    int set = (a[t].t != NULL) + (a[f].n > 0) + (a[i].n > 0) + (a[s].t != NULL);
    *out = (gx_labenc_list){0};
    if (set != 1)
        return set;
    if (a[t].t) {
        out->dtype = gx_tensor_dtype(a[t].t);
        out->n = gx_tensor_numel(a[t].t);
        out->data = gx_tensor_cdata(a[t].t);
        if (gx_tensor_ndim(a[t].t) != 1)
            out->dtype = GX_DTYPE_COUNT; /* refused as a dtype */
    } else if (a[f].n) {
        out->dtype = GX_F64, out->n = (int64_t)a[f].n, out->data = a[f].floats;
        out->as_f32 = true;
    } else if (a[i].n) {
        out->dtype = GX_I64, out->n = (int64_t)a[i].n, out->data = a[i].ints;
    } else {
        out->dtype = gx_tensor_ndim(a[s].t) == 1 ? gx_tensor_dtype(a[s].t) : GX_DTYPE_COUNT;
        out->n = gx_tensor_numel(a[s].t);
        out->data = gx_tensor_cdata(a[s].t);
    }
    return 1;
}

/* The dtype keys or values stand for in the graph: float lists are float32. */
static gx_dtype s_side_dtype(const gx_labenc_list *l)
{
    return l->as_f32 ? GX_F32 : l->dtype;
}

static int s_infer_labenc(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const gx_attrval *a = ic->attr;
    if (x->kind != GX_KIND_TENSOR)
        return gx_infer_errf(ic, GX_EDTYPE, "LabelEncoder: input is not a tensor");
    gx_dtype yt;
    if (a[GX_LABENC_CLASSES_STRINGS].t) { /* opset 1: strings <-> their index */
        if (!s_strings_ok(a[GX_LABENC_CLASSES_STRINGS].t))
            return gx_infer_errf(ic, GX_EATTR, "LabelEncoder: classes_strings must be strings");
        if (x->dtype != GX_STRING && x->dtype != GX_I64)
            return gx_infer_errf(ic, GX_EDTYPE,
                                 "LabelEncoder: input is %s; with classes_strings (opset 1) "
                                 "strings or int64 are needed",
                                 gx_dtype_name(x->dtype));
        yt = x->dtype == GX_STRING ? GX_I64 : GX_STRING;
    } else {
        gx_labenc_list k, v;
        int nk = gx_labenc_side(a, false, &k), nv = gx_labenc_side(a, true, &v);
        if (nk != 1 || nv != 1)
            return gx_infer_errf(ic, GX_EATTR,
                                 "LabelEncoder: exactly one of keys_tensor, keys_strings, "
                                 "keys_int64s, keys_floats and one of the values_ attributes "
                                 "needed (%d and %d given)",
                                 nk, nv);
        const gx_dtype kt = s_side_dtype(&k);
        yt = s_side_dtype(&v);
        if ((kt != GX_STRING && kt != GX_I64 && kt != GX_F32) ||
            (yt != GX_STRING && yt != GX_I64 && yt != GX_F32))
            return gx_infer_errf(ic, GX_EATTR,
                                 "LabelEncoder: keys and values must be 1-D lists of strings, "
                                 "int64 or float32");
        if (k.n != v.n)
            return gx_infer_errf(ic, GX_EATTR,
                                 "LabelEncoder: %lld keys but %lld values", (long long)k.n,
                                 (long long)v.n);
        if (x->dtype != kt)
            return gx_infer_errf(ic, GX_EDTYPE, "LabelEncoder: input is %s but the keys are %s",
                                 gx_dtype_name(x->dtype), gx_dtype_name(kt));
        const gx_tensor *d = a[GX_LABENC_DEFAULT_TENSOR].t;
        if (d && (gx_tensor_dtype(d) != yt || gx_tensor_numel(d) != 1))
            return gx_infer_errf(ic, GX_EATTR,
                                 "LabelEncoder: default_tensor must hold one %s like the values",
                                 gx_dtype_name(yt));
    }
    gx_view_set(&ic->out[0], yt, x->ndim, x->shape);
    return GX_OK;
}

static bool s_batch_same(const gx_batch_ctx *bc)
{
    bc->out_batched[0] = bc->in_batched[0];
    return true;
}

const gx_op_schema gx_schema_LABEL_ENCODER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_labenc_attrs,
    .n_attrs = GX_LABENC_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_labenc,
    .cost = s_cost_io, .batch = s_batch_same,
};

/* ---- Scaler ---- */

static const gx_attr_spec s_scaler_attrs[] = {
    [GX_SCALER_OFFSET] = {.name = "offset", .type = GX_ATTR_FLOATS},
    [GX_SCALER_SCALE] = {.name = "scale", .type = GX_ATTR_FLOATS},
};
_Static_assert(sizeof s_scaler_attrs / sizeof s_scaler_attrs[0] == GX_SCALER_NATTRS,
               "Scaler attrs");

static int s_infer_scaler(gx_infer *ic)
{
    int64_t n, c;
    int rc = s_rows(ic, "Scaler", &n, &c);
    if (rc < 0)
        return rc;
    const size_t no = ic->attr[GX_SCALER_OFFSET].n, ns = ic->attr[GX_SCALER_SCALE].n;
    if ((no != 1 && (int64_t)no != c) || (ns != 1 && (int64_t)ns != c))
        return gx_infer_errf(ic, GX_EATTR,
                             "Scaler: offset has %zu values and scale %zu; 1 or %lld (the "
                             "columns) each",
                             no, ns, (long long)c);
    gx_view_set(&ic->out[0], GX_F32, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_SCALER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_scaler_attrs,
    .n_attrs = GX_SCALER_NATTRS, .infer = s_infer_scaler, .cost = s_cost_io,
    .batch = s_batch_rows,
};

/* ---- Normalizer ---- */

static const gx_attr_spec s_normalizer_attrs[] = {
    [GX_NORMALIZER_NORM] = {.name = "norm", .type = GX_ATTR_STRING, .def_s = "MAX"},
};
_Static_assert(sizeof s_normalizer_attrs / sizeof s_normalizer_attrs[0] == GX_NORMALIZER_NATTRS,
               "Normalizer attrs");

static int s_infer_normalizer(gx_infer *ic)
{
    int64_t n, c;
    int rc = s_rows(ic, "Normalizer", &n, &c);
    if (rc < 0)
        return rc;
    const char *norm = ic->attr[GX_NORMALIZER_NORM].s;
    if (strcmp(norm, "MAX") != 0 && strcmp(norm, "L1") != 0 && strcmp(norm, "L2") != 0)
        return gx_infer_errf(ic, GX_EATTR, "Normalizer: norm \"%s\" is not MAX, L1 or L2", norm);
    gx_view_set(&ic->out[0], GX_F32, ic->in[0].ndim, ic->in[0].shape);
    return GX_OK;
}

const gx_op_schema gx_schema_NORMALIZER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_normalizer_attrs,
    .n_attrs = GX_NORMALIZER_NATTRS, .infer = s_infer_normalizer, .cost = s_cost_io,
    .batch = s_batch_rows,
};

/* ---- Binarizer ---- */

static const gx_attr_spec s_binarizer_attrs[] = {
    [GX_BINARIZER_THRESHOLD] = {.name = "threshold", .type = GX_ATTR_FLOAT},
};
_Static_assert(sizeof s_binarizer_attrs / sizeof s_binarizer_attrs[0] == GX_BINARIZER_NATTRS,
               "Binarizer attrs");

static int s_infer_binarizer(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    if (!s_numeric(x->dtype) || x->kind != GX_KIND_TENSOR)
        return gx_infer_errf(ic, GX_EDTYPE,
                             "Binarizer: input is %s; float32, float64, int64 or int32 needed",
                             gx_dtype_name(x->dtype));
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_BINARIZER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_binarizer_attrs,
    .n_attrs = GX_BINARIZER_NATTRS, .flags = GX_OPF_ELEMENTWISE, .infer = s_infer_binarizer,
    .cost = s_cost_io,
};

/* ---- Imputer ---- */

static const gx_attr_spec s_imputer_attrs[] = {
    [GX_IMPUTER_IMPUTED_VALUE_FLOATS] = {.name = "imputed_value_floats", .type = GX_ATTR_FLOATS},
    [GX_IMPUTER_IMPUTED_VALUE_INT64S] = {.name = "imputed_value_int64s", .type = GX_ATTR_INTS},
    [GX_IMPUTER_REPLACED_VALUE_FLOAT] = {.name = "replaced_value_float", .type = GX_ATTR_FLOAT},
    [GX_IMPUTER_REPLACED_VALUE_INT64] = {.name = "replaced_value_int64", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_imputer_attrs / sizeof s_imputer_attrs[0] == GX_IMPUTER_NATTRS,
               "Imputer attrs");

static int s_infer_imputer(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    int64_t n, c;
    if (x->dtype != GX_F32 && x->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "Imputer: input is %s; float32 or int64 needed",
                             gx_dtype_name(x->dtype));
    int rc = s_rows(ic, "Imputer", &n, &c);
    if (rc < 0)
        return rc;
    const size_t nv = ic->attr[x->dtype == GX_F32 ? GX_IMPUTER_IMPUTED_VALUE_FLOATS
                                                  : GX_IMPUTER_IMPUTED_VALUE_INT64S]
                          .n;
    if (nv != 1 && (int64_t)nv != c)
        return gx_infer_errf(ic, GX_EATTR,
                             "Imputer: %zu imputed_value_%s for %lld columns; 1 or one a column",
                             nv, x->dtype == GX_F32 ? "floats" : "int64s", (long long)c);
    gx_view_set(&ic->out[0], x->dtype, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_IMPUTER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_imputer_attrs,
    .n_attrs = GX_IMPUTER_NATTRS, .infer = s_infer_imputer, .cost = s_cost_io,
    .batch = s_batch_rows,
};

/* ---- ArrayFeatureExtractor: X[..., Y]; X [C] gives [1, |Y|] ---- */

static int s_infer_afe(gx_infer *ic)
{
    const gx_view *x = &ic->in[0], *y = &ic->in[1];
    if (x->kind != GX_KIND_TENSOR || (!s_numeric(x->dtype) && x->dtype != GX_STRING))
        return gx_infer_errf(ic, GX_EDTYPE,
                             "ArrayFeatureExtractor: X is %s; numbers or strings needed",
                             gx_dtype_name(x->dtype));
    if (y->dtype != GX_I64)
        return gx_infer_errf(ic, GX_EDTYPE, "ArrayFeatureExtractor: Y is %s; int64 needed",
                             gx_dtype_name(y->dtype));
    if (x->ndim < 1)
        return gx_infer_errf(ic, GX_ESHAPE, "ArrayFeatureExtractor: X is a scalar");
    const int64_t c = x->shape[x->ndim - 1], k = gx_view_numel(y);
    int64_t shape[GX_MAX_DIMS];
    int nd = x->ndim;
    memcpy(shape, x->shape, sizeof shape);
    if (nd == 1)
        nd = 2, shape[0] = 1;
    shape[nd - 1] = k;
    gx_view_set(&ic->out[0], x->dtype, nd, shape);
    const int64_t *ix = y->data;
    if (!ix) /* the indices are checked at run time */
        return GX_INFER_DYNAMIC;
    for (int64_t i = 0; i < k; i++)
        if (ix[i] < 0 || ix[i] >= c)
            return gx_infer_errf(ic, GX_EINVAL,
                                 "ArrayFeatureExtractor: index %lld is out of range [0, %lld)",
                                 (long long)ix[i], (long long)c);
    return GX_OK;
}

static bool s_batch_afe(const gx_batch_ctx *bc)
{
    bc->out_batched[0] = bc->in_batched[0];
    return !bc->in_batched[1] && (!bc->in_batched[0] || bc->in[0].ndim >= 2);
}

const gx_op_schema gx_schema_ARRAY_FEATURE_EXTRACTOR = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1, .flags = GX_OPF_STRINGS,
    .infer = s_infer_afe, .cost = s_cost_io, .batch = s_batch_afe,
};

/* ---- OneHotEncoder ---- */

static const gx_attr_spec s_ohe_attrs[] = {
    [GX_OHE_CATS_INT64S] = {.name = "cats_int64s", .type = GX_ATTR_INTS},
    [GX_OHE_CATS_STRINGS] = {.name = "cats_strings", .type = GX_ATTR_TENSOR},
    [GX_OHE_ZEROS] = {.name = "zeros", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_ohe_attrs / sizeof s_ohe_attrs[0] == GX_OHE_NATTRS, "OneHotEncoder attrs");

int64_t gx_ohe_find(const gx_attrval *a, const gx_view *x, int64_t i)
{
    if (x->dtype == GX_STRING) {
        const gx_tensor *cs = a[GX_OHE_CATS_STRINGS].t;
        const gx_strrec *const *c = gx_tensor_cdata(cs);
        const gx_strrec *v = ((const gx_strrec *const *)x->data)[i];
        for (int64_t j = 0; j < gx_tensor_numel(cs); j++)
            if (gx_str_eq(c[j], v))
                return j;
        return -1;
    }
    int64_t v; /* numbers are categories as int64 (truncated), as ONNX Runtime */
    if (x->dtype == GX_F32)
        v = (int64_t)((const float *)x->data)[i];
    else if (x->dtype == GX_F64)
        v = (int64_t)((const double *)x->data)[i];
    else if (x->dtype == GX_I32)
        v = ((const int32_t *)x->data)[i];
    else
        v = ((const int64_t *)x->data)[i];
    for (size_t j = 0; j < a[GX_OHE_CATS_INT64S].n; j++)
        if (a[GX_OHE_CATS_INT64S].ints[j] == v)
            return (int64_t)j;
    return -1;
}

/* With zeros = 0 an unknown category is an error: found when the values
 * are (at run time, or for a constant). */
static int s_infer_ohe(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const gx_attrval *a = ic->attr;
    const gx_tensor *cs = a[GX_OHE_CATS_STRINGS].t;
    if (x->kind != GX_KIND_TENSOR || (!s_numeric(x->dtype) && x->dtype != GX_STRING))
        return gx_infer_errf(ic, GX_EDTYPE, "OneHotEncoder: input is %s",
                             gx_dtype_name(x->dtype));
    if (!s_strings_ok(cs) || (x->dtype == GX_STRING) != (cs != NULL) ||
        (cs ? gx_tensor_numel(cs) : (int64_t)a[GX_OHE_CATS_INT64S].n) < 1)
        return gx_infer_errf(ic, GX_EATTR,
                             "OneHotEncoder: %s input needs categories in %s",
                             gx_dtype_name(x->dtype),
                             x->dtype == GX_STRING ? "cats_strings" : "cats_int64s");
    if (x->ndim >= GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ESHAPE, "OneHotEncoder: input of rank %d", x->ndim);
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim] = cs ? gx_tensor_numel(cs) : (int64_t)a[GX_OHE_CATS_INT64S].n;
    gx_view_set(&ic->out[0], GX_F32, x->ndim + 1, shape);
    if (a[GX_OHE_ZEROS].i)
        return GX_OK;
    if (!x->data)
        return GX_INFER_DYNAMIC;
    for (int64_t i = 0; i < x->numel; i++)
        if (gx_ohe_find(a, x, i) < 0)
            return gx_infer_errf(ic, GX_EINVAL,
                                 "OneHotEncoder: element %lld is no category (zeros = 0)",
                                 (long long)i);
    return GX_OK;
}

const gx_op_schema gx_schema_ONE_HOT_ENCODER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_ohe_attrs,
    .n_attrs = GX_OHE_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_ohe, .cost = s_cost_io,
    .batch = s_batch_same,
};

/* ---- FeatureVectorizer ---- */

static const gx_attr_spec s_featvec_attrs[] = {
    [GX_FEATVEC_INPUTDIMENSIONS] = {.name = "inputdimensions", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_featvec_attrs / sizeof s_featvec_attrs[0] == GX_FEATVEC_NATTRS,
               "FeatureVectorizer attrs");

static int s_infer_featvec(gx_infer *ic)
{
    const gx_attrval *d = &ic->attr[GX_FEATVEC_INPUTDIMENSIONS];
    if ((int)d->n != ic->n_in)
        return gx_infer_errf(ic, GX_EATTR,
                             "FeatureVectorizer: %zu inputdimensions for %d inputs", d->n,
                             ic->n_in);
    int64_t n = -1, total = 0;
    for (int i = 0; i < ic->n_in; i++) {
        const gx_view *x = &ic->in[i];
        if (!s_numeric(x->dtype) || x->kind != GX_KIND_TENSOR || x->ndim < 1 || x->ndim > 2)
            return gx_infer_errf(ic, GX_EDTYPE,
                                 "FeatureVectorizer: input %d is %s of rank %d; numbers [C] or "
                                 "[N, C] needed",
                                 i, gx_dtype_name(x->dtype), x->ndim);
        const int64_t rows = x->ndim == 2 ? x->shape[0] : 1;
        if (n >= 0 && rows != n)
            return gx_infer_errf(ic, GX_ESHAPE, "FeatureVectorizer: input %d has %lld rows, "
                                 "input 0 %lld", i, (long long)rows, (long long)n);
        if (d->ints[i] < 0 || d->ints[i] > ((int64_t)1 << 24))
            return gx_infer_errf(ic, GX_EATTR, "FeatureVectorizer: inputdimensions[%d] = %lld",
                                 i, (long long)d->ints[i]);
        n = rows;
        total += d->ints[i];
    }
    gx_view_set(&ic->out[0], GX_F32, 2, (int64_t[]){n, total});
    return GX_OK;
}

static bool s_batch_featvec(const gx_batch_ctx *bc)
{
    bool any = false, all = true;
    for (int i = 0; i < bc->n_in; i++) {
        any = any || bc->in_batched[i];
        all = all && bc->in_batched[i] && bc->in[i].ndim == 2;
    }
    bc->out_batched[0] = any;
    return !any || all;
}

const gx_op_schema gx_schema_FEATURE_VECTORIZER = {
    .min_in = 1, .max_in = GX_MAX_OP_INPUTS, .min_out = 1, .max_out = 1,
    .attrs = s_featvec_attrs, .n_attrs = GX_FEATVEC_NATTRS, .infer = s_infer_featvec,
    .cost = s_cost_io, .batch = s_batch_featvec,
};

/* ---- LinearRegressor ---- */

static const gx_attr_spec s_linreg_attrs[] = {
    [GX_LINREG_COEFFICIENTS] = {.name = "coefficients", .type = GX_ATTR_FLOATS},
    [GX_LINREG_INTERCEPTS] = {.name = "intercepts", .type = GX_ATTR_FLOATS},
    [GX_LINREG_POST_TRANSFORM] = {.name = "post_transform", .type = GX_ATTR_STRING,
                                  .def_s = "NONE"},
    [GX_LINREG_TARGETS] = {.name = "targets", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_linreg_attrs / sizeof s_linreg_attrs[0] == GX_LINREG_NATTRS,
               "LinearRegressor attrs");

static gx_cost s_cost_linear(const gx_infer *ic, size_t ncoef)
{
    double n = (double)gx_view_numel(&ic->out[0]) / 1;
    return (gx_cost){.flops = 2 * (double)ncoef * (ic->in[0].ndim == 2 ? ic->in[0].shape[0] : 1) + n,
                     .bytes = gx_infer_io_bytes(ic)};
}

static gx_cost s_cost_linreg(const gx_infer *ic)
{
    return s_cost_linear(ic, ic->attr[GX_LINREG_COEFFICIENTS].n);
}

static int s_infer_linreg(gx_infer *ic)
{
    int64_t n, c;
    int rc = s_rows(ic, "LinearRegressor", &n, &c);
    if (rc < 0 || (rc = s_transform_attr(ic, "LinearRegressor", GX_LINREG_POST_TRANSFORM)) < 0)
        return rc;
    const int64_t t = ic->attr[GX_LINREG_TARGETS].i;
    const size_t nc = ic->attr[GX_LINREG_COEFFICIENTS].n, ni = ic->attr[GX_LINREG_INTERCEPTS].n;
    if (t < 1 || t > ((int64_t)1 << 24) || c < 1 || (int64_t)nc != t * c ||
        (ni != 0 && (int64_t)ni != t))
        return gx_infer_errf(ic, GX_EATTR,
                             "LinearRegressor: %lld targets of %lld columns need %lld "
                             "coefficients (%zu given) and 0 or %lld intercepts (%zu given)",
                             (long long)t, (long long)c, (long long)(t * c), nc, (long long)t,
                             ni);
    gx_view_set(&ic->out[0], GX_F32, 2, (int64_t[]){n, t});
    return GX_OK;
}

const gx_op_schema gx_schema_LINEAR_REGRESSOR = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_linreg_attrs,
    .n_attrs = GX_LINREG_NATTRS, .infer = s_infer_linreg, .cost = s_cost_linreg,
    .batch = s_batch_rows,
};

/* ---- LinearClassifier ---- */

static const gx_attr_spec s_lincls_attrs[] = {
    [GX_LINCLS_CLASSLABELS_INTS] = {.name = "classlabels_ints", .type = GX_ATTR_INTS},
    [GX_LINCLS_CLASSLABELS_STRINGS] = {.name = "classlabels_strings", .type = GX_ATTR_TENSOR},
    [GX_LINCLS_COEFFICIENTS] = {.name = "coefficients", .type = GX_ATTR_FLOATS,
                                .required = true},
    [GX_LINCLS_INTERCEPTS] = {.name = "intercepts", .type = GX_ATTR_FLOATS},
    [GX_LINCLS_MULTI_CLASS] = {.name = "multi_class", .type = GX_ATTR_INT},
    [GX_LINCLS_POST_TRANSFORM] = {.name = "post_transform", .type = GX_ATTR_STRING,
                                  .def_s = "NONE"},
};
_Static_assert(sizeof s_lincls_attrs / sizeof s_lincls_attrs[0] == GX_LINCLS_NATTRS,
               "LinearClassifier attrs");

static gx_cost s_cost_lincls(const gx_infer *ic)
{
    return s_cost_linear(ic, ic->attr[GX_LINCLS_COEFFICIENTS].n);
}

static int s_infer_lincls(gx_infer *ic)
{
    int64_t n, c;
    const gx_attrval *a = ic->attr;
    int rc = s_rows(ic, "LinearClassifier", &n, &c);
    if (rc < 0 || (rc = s_transform_attr(ic, "LinearClassifier", GX_LINCLS_POST_TRANSFORM)) < 0)
        return rc;
    const gx_tensor *ls = a[GX_LINCLS_CLASSLABELS_STRINGS].t;
    if (!s_strings_ok(ls))
        return gx_infer_errf(ic, GX_EATTR, "LinearClassifier: classlabels_strings must be strings");
    const int64_t e = (int64_t)a[GX_LINCLS_INTERCEPTS].n;
    const int64_t nl = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_LINCLS_CLASSLABELS_INTS].n;
    if (e < 1 || c < 1 || (int64_t)a[GX_LINCLS_COEFFICIENTS].n != e * c)
        return gx_infer_errf(ic, GX_EATTR,
                             "LinearClassifier: %lld classes (intercepts) of %lld columns need "
                             "%lld coefficients (%zu given)",
                             (long long)e, (long long)c, (long long)(e * c),
                             a[GX_LINCLS_COEFFICIENTS].n);
    if (e > 1 && nl != e)
        return gx_infer_errf(ic, GX_EATTR,
                             "LinearClassifier: %lld classes but %lld class labels", (long long)e,
                             (long long)nl);
    const int64_t cols = e == 1 && nl == 2 ? 2 : e;
    gx_view_set(&ic->out[0], ls ? GX_STRING : GX_I64, 1, &n);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_F32, 2, (int64_t[]){n, cols});
    return GX_OK;
}

const gx_op_schema gx_schema_LINEAR_CLASSIFIER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2, .attrs = s_lincls_attrs,
    .n_attrs = GX_LINCLS_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_lincls,
    .cost = s_cost_lincls, .batch = s_batch_rows,
};

/* ---- TreeEnsembleRegressor / TreeEnsembleClassifier ---- */

#define S_TREE_NODE_ATTRS                                                                     \
    [GX_TREE_NODES_FALSENODEIDS] = {.name = "nodes_falsenodeids", .type = GX_ATTR_INTS},      \
    [GX_TREE_NODES_FEATUREIDS] = {.name = "nodes_featureids", .type = GX_ATTR_INTS},          \
    [GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE] = {.name = "nodes_missing_value_tracks_true",   \
                                                 .type = GX_ATTR_INTS},                      \
    [GX_TREE_NODES_MODES] = {.name = "nodes_modes", .type = GX_ATTR_TENSOR},                  \
    [GX_TREE_NODES_NODEIDS] = {.name = "nodes_nodeids", .type = GX_ATTR_INTS},                \
    [GX_TREE_NODES_TREEIDS] = {.name = "nodes_treeids", .type = GX_ATTR_INTS},                \
    [GX_TREE_NODES_TRUENODEIDS] = {.name = "nodes_truenodeids", .type = GX_ATTR_INTS},        \
    [GX_TREE_NODES_VALUES] = {.name = "nodes_values", .type = GX_ATTR_FLOATS},                \
    [GX_TREE_NODES_VALUES_AS_TENSOR] = {.name = "nodes_values_as_tensor",                     \
                                        .type = GX_ATTR_TENSOR},                              \
    [GX_TREE_POST_TRANSFORM] = {.name = "post_transform", .type = GX_ATTR_STRING,             \
                                .def_s = "NONE"},                                             \
    [GX_TREE_BASE_VALUES] = {.name = "base_values", .type = GX_ATTR_FLOATS},                  \
    [GX_TREE_BASE_VALUES_AS_TENSOR] = {.name = "base_values_as_tensor", .type = GX_ATTR_TENSOR}

static const gx_attr_spec s_treereg_attrs[] = {
    S_TREE_NODE_ATTRS,
    [GX_TREE_W_IDS] = {.name = "target_ids", .type = GX_ATTR_INTS},
    [GX_TREE_W_NODEIDS] = {.name = "target_nodeids", .type = GX_ATTR_INTS},
    [GX_TREE_W_TREEIDS] = {.name = "target_treeids", .type = GX_ATTR_INTS},
    [GX_TREE_W_WEIGHTS] = {.name = "target_weights", .type = GX_ATTR_FLOATS},
    [GX_TREE_W_WEIGHTS_AS_TENSOR] = {.name = "target_weights_as_tensor", .type = GX_ATTR_TENSOR},
    [GX_TREE_REG_AGGREGATE_FUNCTION] = {.name = "aggregate_function", .type = GX_ATTR_STRING,
                                        .def_s = "SUM"},
    [GX_TREE_REG_N_TARGETS] = {.name = "n_targets", .type = GX_ATTR_INT, .def_i = 1},
};
_Static_assert(sizeof s_treereg_attrs / sizeof s_treereg_attrs[0] == GX_TREE_REG_NATTRS,
               "TreeEnsembleRegressor attrs");

static const gx_attr_spec s_treecls_attrs[] = {
    S_TREE_NODE_ATTRS,
    [GX_TREE_W_IDS] = {.name = "class_ids", .type = GX_ATTR_INTS},
    [GX_TREE_W_NODEIDS] = {.name = "class_nodeids", .type = GX_ATTR_INTS},
    [GX_TREE_W_TREEIDS] = {.name = "class_treeids", .type = GX_ATTR_INTS},
    [GX_TREE_W_WEIGHTS] = {.name = "class_weights", .type = GX_ATTR_FLOATS},
    [GX_TREE_W_WEIGHTS_AS_TENSOR] = {.name = "class_weights_as_tensor", .type = GX_ATTR_TENSOR},
    [GX_TREE_CLS_CLASSLABELS_INT64S] = {.name = "classlabels_int64s", .type = GX_ATTR_INTS},
    [GX_TREE_CLS_CLASSLABELS_STRINGS] = {.name = "classlabels_strings", .type = GX_ATTR_TENSOR},
};
_Static_assert(sizeof s_treecls_attrs / sizeof s_treecls_attrs[0] == GX_TREE_CLS_NATTRS,
               "TreeEnsembleClassifier attrs");

static const char *const s_modes[] = {
    [GX_TREE_LEQ] = "BRANCH_LEQ", [GX_TREE_LT] = "BRANCH_LT", [GX_TREE_GTE] = "BRANCH_GTE",
    [GX_TREE_GT] = "BRANCH_GT",   [GX_TREE_EQ] = "BRANCH_EQ", [GX_TREE_NEQ] = "BRANCH_NEQ",
    [GX_TREE_LEAF] = "LEAF",
};

int gx_tree_mode(const gx_strrec *r)
{
    for (int i = 0; i < (int)(sizeof s_modes / sizeof s_modes[0]); i++)
        if (gx_str_len(r) == strlen(s_modes[i]) &&
            memcmp(gx_str_bytes(r), s_modes[i], gx_str_len(r)) == 0)
            return i;
    return -1;
}

/* A number tensor attribute: 1-D float32 or float64, or absent. */
static bool s_nums_ok(const gx_tensor *t)
{
    return !t || ((gx_tensor_dtype(t) == GX_F32 || gx_tensor_dtype(t) == GX_F64) &&
                  gx_tensor_ndim(t) == 1);
}

static double s_tensor_num(const gx_tensor *t, int64_t i)
{
    return gx_tensor_dtype(t) == GX_F64 ? ((const double *)gx_tensor_cdata(t))[i]
                                        : ((const float *)gx_tensor_cdata(t))[i];
}

int64_t gx_ml_count(const gx_attrval *a, int floats, int tensor)
{
    return a[tensor].t ? gx_tensor_numel(a[tensor].t) : (int64_t)a[floats].n;
}

double gx_ml_num(const gx_attrval *a, int floats, int tensor, int64_t i)
{
    return a[tensor].t ? s_tensor_num(a[tensor].t, i) : (double)(float)a[floats].floats[i];
}

static int s_cmp_key(const void *a, const void *b)
{
    const gx_tree_key *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void gx_tree_sort(gx_tree_key *k, size_t n)
{
    qsort(k, n, sizeof *k, s_cmp_key);
}

int64_t gx_tree_find(const gx_tree_key *k, size_t n, int64_t tree, int64_t node)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid].tree < tree || (k[mid].tree == tree && k[mid].node < node))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && k[lo].tree == tree && k[lo].node == node ? (int64_t)lo : -1;
}

size_t gx_tree_scratch_bytes(size_t n_nodes, size_t n_weights, size_t n_members, size_t n_out)
{
    return (n_nodes + n_weights) * sizeof(gx_tree_key) +
           n_nodes * (sizeof(gx_tree_node) + sizeof(int64_t)) +
           n_weights * sizeof(gx_tree_weight) + n_members * sizeof(double) +
           GX_TREE_BLOCKS * n_out * 16 + 128;
}

/* The scores of a row: the regressor's targets, the classifier's classes. */
static size_t s_treereg_scratch(const gx_infer *ic)
{
    return gx_tree_scratch_bytes(ic->attr[GX_TREE_NODES_NODEIDS].n, ic->attr[GX_TREE_W_IDS].n, 0,
                                 (size_t)ic->attr[GX_TREE_REG_N_TARGETS].i);
}

static size_t s_treecls_scratch(const gx_infer *ic)
{
    const gx_tensor *ls = ic->attr[GX_TREE_CLS_CLASSLABELS_STRINGS].t;
    const int64_t k = ls ? gx_tensor_numel(ls) : (int64_t)ic->attr[GX_TREE_CLS_CLASSLABELS_INT64S].n;
    return gx_tree_scratch_bytes(ic->attr[GX_TREE_NODES_NODEIDS].n, ic->attr[GX_TREE_W_IDS].n, 0,
                                 (size_t)k);
}

/* The trees and their leaves' weights: consistent lengths, known modes,
 * features below c, weight ids below n_out, every branch's children
 * present. The *_as_tensor forms (float32 or float64) replace the lists. */
static int s_check_trees(gx_infer *ic, const char *op, int64_t c, int64_t n_out)
{
    const gx_attrval *a = ic->attr;
    const size_t n = a[GX_TREE_NODES_NODEIDS].n, w = a[GX_TREE_W_IDS].n;
    const gx_tensor *modes = a[GX_TREE_NODES_MODES].t;
    int rc = s_transform_attr(ic, op, GX_TREE_POST_TRANSFORM);
    if (rc < 0)
        return rc;
    if (!s_nums_ok(a[GX_TREE_NODES_VALUES_AS_TENSOR].t) ||
        !s_nums_ok(a[GX_TREE_W_WEIGHTS_AS_TENSOR].t) ||
        !s_nums_ok(a[GX_TREE_BASE_VALUES_AS_TENSOR].t))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: the *_as_tensor attributes must be 1-D float64 or float32 "
                             "tensors",
                             op);
    if (n == 0 || a[GX_TREE_NODES_TREEIDS].n != n || a[GX_TREE_NODES_FEATUREIDS].n != n ||
        gx_ml_count(a, GX_TREE_NODES_VALUES, GX_TREE_NODES_VALUES_AS_TENSOR) != (int64_t)n ||
        a[GX_TREE_NODES_TRUENODEIDS].n != n || a[GX_TREE_NODES_FALSENODEIDS].n != n || !modes ||
        !s_strings_ok(modes) || gx_tensor_numel(modes) != (int64_t)n ||
        (a[GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE].n != 0 &&
         a[GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE].n != n))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: the nodes_ attributes must all have one entry a node (%zu "
                             "nodes_nodeids)",
                             op, n);
    if (a[GX_TREE_W_NODEIDS].n != w || a[GX_TREE_W_TREEIDS].n != w ||
        gx_ml_count(a, GX_TREE_W_WEIGHTS, GX_TREE_W_WEIGHTS_AS_TENSOR) != (int64_t)w)
        return gx_infer_errf(ic, GX_EATTR, "%s: the leaf weight attributes differ in length", op);
    const gx_strrec *const *ms = gx_tensor_cdata(modes);
    gx_tree_key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return gx_infer_errf(ic, GX_ENOMEM, "%s: out of memory", op);
    for (size_t i = 0; i < n; i++)
        k[i] = (gx_tree_key){a[GX_TREE_NODES_TREEIDS].ints[i], a[GX_TREE_NODES_NODEIDS].ints[i],
                             (int64_t)i};
    gx_tree_sort(k, n);
    for (size_t i = 0; i + 1 < n && rc == GX_OK; i++)
        if (k[i].tree == k[i + 1].tree && k[i].node == k[i + 1].node)
            rc = gx_infer_errf(ic, GX_EATTR, "%s: tree %lld has two nodes %lld", op,
                               (long long)k[i].tree, (long long)k[i].node);
    for (size_t i = 0; i < n && rc == GX_OK; i++) {
        const int m = gx_tree_mode(ms[i]);
        const int64_t t = a[GX_TREE_NODES_TREEIDS].ints[i], f = a[GX_TREE_NODES_FEATUREIDS].ints[i];
        if (m < 0)
            rc = gx_infer_errf(ic, GX_EATTR, "%s: node %zu has mode \"%.40s\"", op, i,
                               gx_str_bytes(ms[i]));
        else if (m != GX_TREE_LEAF && (f < 0 || f >= c))
            rc = gx_infer_errf(ic, GX_EATTR,
                               "%s: node %zu tests feature %lld; the input has %lld columns", op,
                               i, (long long)f, (long long)c);
        else if (m != GX_TREE_LEAF &&
                 (gx_tree_find(k, n, t, a[GX_TREE_NODES_TRUENODEIDS].ints[i]) < 0 ||
                  gx_tree_find(k, n, t, a[GX_TREE_NODES_FALSENODEIDS].ints[i]) < 0))
            rc = gx_infer_errf(ic, GX_EATTR, "%s: node %zu branches to a node tree %lld lacks",
                               op, i, (long long)t);
    }
    for (size_t i = 0; i < w && rc == GX_OK; i++)
        if (a[GX_TREE_W_IDS].ints[i] < 0 || a[GX_TREE_W_IDS].ints[i] >= n_out)
            rc = gx_infer_errf(ic, GX_EATTR, "%s: leaf weight %zu is for output %lld of %lld", op,
                               i, (long long)a[GX_TREE_W_IDS].ints[i], (long long)n_out);
    free(k);
    return rc;
}

static gx_cost s_cost_tree(const gx_infer *ic)
{
    const double rows = ic->in[0].ndim == 2 ? (double)ic->in[0].shape[0] : 1;
    return (gx_cost){.flops = rows * 16 * (double)ic->attr[GX_TREE_NODES_NODEIDS].n,
                     .bytes = gx_infer_io_bytes(ic)};
}

/* SVMClassifier: share 0 runs every row (a row's working memory is the
 * scratch). */
static int s_one_share(const gx_infer *ic)
{
    (void)ic;
    return 1;
}

static int s_infer_treereg(gx_infer *ic)
{
    int64_t n, c;
    const gx_attrval *a = ic->attr;
    int rc = s_rows(ic, "TreeEnsembleRegressor", &n, &c);
    if (rc < 0)
        return rc;
    const int64_t t = a[GX_TREE_REG_N_TARGETS].i;
    const char *agg = a[GX_TREE_REG_AGGREGATE_FUNCTION].s;
    if (t < 1 || t > ((int64_t)1 << 24))
        return gx_infer_errf(ic, GX_EATTR, "TreeEnsembleRegressor: n_targets %lld", (long long)t);
    if (strcmp(agg, "SUM") != 0 && strcmp(agg, "AVERAGE") != 0 && strcmp(agg, "MIN") != 0 &&
        strcmp(agg, "MAX") != 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "TreeEnsembleRegressor: aggregate_function \"%s\" is not SUM, "
                             "AVERAGE, MIN or MAX",
                             agg);
    if ((rc = s_check_trees(ic, "TreeEnsembleRegressor", c, t)) < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, 2, (int64_t[]){n, t});
    return GX_OK;
}

const gx_op_schema gx_schema_TREE_ENSEMBLE_REGRESSOR = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_treereg_attrs,
    .n_attrs = GX_TREE_REG_NATTRS, .infer = s_infer_treereg, .cost = s_cost_tree,
    .scratch = s_treereg_scratch, .batch = s_batch_rows,
};

static int s_infer_treecls(gx_infer *ic)
{
    int64_t n, c;
    const gx_attrval *a = ic->attr;
    int rc = s_rows(ic, "TreeEnsembleClassifier", &n, &c);
    if (rc < 0)
        return rc;
    const gx_tensor *ls = a[GX_TREE_CLS_CLASSLABELS_STRINGS].t;
    if (!s_strings_ok(ls))
        return gx_infer_errf(ic, GX_EATTR,
                             "TreeEnsembleClassifier: classlabels_strings must be strings");
    const int64_t k = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_TREE_CLS_CLASSLABELS_INT64S].n;
    if (k < 2 || (ls && a[GX_TREE_CLS_CLASSLABELS_INT64S].n))
        return gx_infer_errf(ic, GX_EATTR,
                             "TreeEnsembleClassifier: two or more class labels needed, in "
                             "classlabels_int64s or classlabels_strings");
    if (!s_nums_ok(a[GX_TREE_BASE_VALUES_AS_TENSOR].t))
        return gx_infer_errf(ic, GX_EATTR,
                             "TreeEnsembleClassifier: base_values_as_tensor must be a 1-D "
                             "float64 or float32 tensor");
    const int64_t nb = gx_ml_count(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR);
    if (nb != 0 && nb != k && !(k == 2 && nb == 1))
        return gx_infer_errf(ic, GX_EATTR,
                             "TreeEnsembleClassifier: %lld base_values for %lld classes",
                             (long long)nb, (long long)k);
    if ((rc = s_check_trees(ic, "TreeEnsembleClassifier", c, k)) < 0)
        return rc;
    gx_view_set(&ic->out[0], ls ? GX_STRING : GX_I64, 1, &n);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_F32, 2, (int64_t[]){n, k});
    return GX_OK;
}

const gx_op_schema gx_schema_TREE_ENSEMBLE_CLASSIFIER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2, .attrs = s_treecls_attrs,
    .n_attrs = GX_TREE_CLS_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_treecls,
    .cost = s_cost_tree, .scratch = s_treecls_scratch, .batch = s_batch_rows,
};

/* ---- TreeEnsemble (opset 5) ---- */

static const gx_attr_spec s_tree5_attrs[] = {
    [GX_TREE5_AGGREGATE_FUNCTION] = {.name = "aggregate_function", .type = GX_ATTR_INT,
                                     .def_i = 1},
    [GX_TREE5_LEAF_TARGETIDS] = {.name = "leaf_targetids", .type = GX_ATTR_INTS},
    [GX_TREE5_LEAF_WEIGHTS] = {.name = "leaf_weights", .type = GX_ATTR_TENSOR},
    [GX_TREE5_MEMBERSHIP_VALUES] = {.name = "membership_values", .type = GX_ATTR_TENSOR},
    [GX_TREE5_N_TARGETS] = {.name = "n_targets", .type = GX_ATTR_INT},
    [GX_TREE5_NODES_FALSELEAFS] = {.name = "nodes_falseleafs", .type = GX_ATTR_INTS},
    [GX_TREE5_NODES_FALSENODEIDS] = {.name = "nodes_falsenodeids", .type = GX_ATTR_INTS},
    [GX_TREE5_NODES_FEATUREIDS] = {.name = "nodes_featureids", .type = GX_ATTR_INTS},
    [GX_TREE5_NODES_MISSING_VALUE_TRACKS_TRUE] = {.name = "nodes_missing_value_tracks_true",
                                                  .type = GX_ATTR_INTS},
    [GX_TREE5_NODES_MODES] = {.name = "nodes_modes", .type = GX_ATTR_TENSOR},
    [GX_TREE5_NODES_SPLITS] = {.name = "nodes_splits", .type = GX_ATTR_TENSOR},
    [GX_TREE5_NODES_TRUELEAFS] = {.name = "nodes_trueleafs", .type = GX_ATTR_INTS},
    [GX_TREE5_NODES_TRUENODEIDS] = {.name = "nodes_truenodeids", .type = GX_ATTR_INTS},
    [GX_TREE5_POST_TRANSFORM] = {.name = "post_transform", .type = GX_ATTR_INT},
    [GX_TREE5_TREE_ROOTS] = {.name = "tree_roots", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_tree5_attrs / sizeof s_tree5_attrs[0] == GX_TREE5_NATTRS,
               "TreeEnsemble attrs");

static size_t s_tree5_scratch(const gx_infer *ic)
{
    const gx_attrval *a = ic->attr;
    const size_t ni = a[GX_TREE5_NODES_FEATUREIDS].n, nl = a[GX_TREE5_LEAF_TARGETIDS].n;
    const gx_tensor *mv = a[GX_TREE5_MEMBERSHIP_VALUES].t;
    return gx_tree_scratch_bytes(ni + nl, nl, mv ? (size_t)gx_tensor_numel(mv) : 0,
                                 (size_t)a[GX_TREE5_N_TARGETS].i);
}

static gx_cost s_cost_tree5(const gx_infer *ic)
{
    const double rows = ic->in[0].ndim == 2 ? (double)ic->in[0].shape[0] : 1;
    return (gx_cost){.flops = rows * 16 * (double)ic->attr[GX_TREE5_NODES_FEATUREIDS].n,
                     .bytes = gx_infer_io_bytes(ic)};
}

/* A child index: below the leaves' count or the interior nodes'. */
static bool s_child_ok(int64_t id, int64_t is_leaf, int64_t ni, int64_t nl)
{
    return (is_leaf == 0 || is_leaf == 1) && id >= 0 && id < (is_leaf ? nl : ni);
}

/* ONNX Runtime reads a tree whose root's true and false ids are equal as
 * a single leaf (that root's index into the leaves). */
bool gx_tree5_root_is_leaf(const gx_attrval *a, int64_t root)
{
    return a[GX_TREE5_NODES_TRUENODEIDS].ints[root] == a[GX_TREE5_NODES_FALSENODEIDS].ints[root];
}

static int s_infer_tree5(gx_infer *ic)
{
    const char *op = "TreeEnsemble";
    const gx_attrval *a = ic->attr;
    const gx_view *x = &ic->in[0];
    int64_t n, c;
    if (x->dtype != GX_F32 && x->dtype != GX_F64)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: input is %s; float32 or float64 needed", op,
                             gx_dtype_name(x->dtype));
    int rc = s_rows(ic, op, &n, &c);
    if (rc < 0)
        return rc;
    const int64_t e = a[GX_TREE5_N_TARGETS].i, agg = a[GX_TREE5_AGGREGATE_FUNCTION].i;
    const int64_t pt = a[GX_TREE5_POST_TRANSFORM].i;
    if (e < 1 || e > ((int64_t)1 << 24))
        return gx_infer_errf(ic, GX_EATTR, "%s: n_targets %lld (1 or more needed)", op,
                             (long long)e);
    if (agg < 0 || agg > 3 || pt < 0 || pt > GX_ML_PROBIT)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: aggregate_function %lld (0-3) or post_transform %lld (0-4) "
                             "out of range",
                             op, (long long)agg, (long long)pt);
    const size_t ni = a[GX_TREE5_NODES_FEATUREIDS].n, nl = a[GX_TREE5_LEAF_TARGETIDS].n;
    const gx_tensor *modes = a[GX_TREE5_NODES_MODES].t, *splits = a[GX_TREE5_NODES_SPLITS].t;
    const gx_tensor *lw = a[GX_TREE5_LEAF_WEIGHTS].t, *mv = a[GX_TREE5_MEMBERSHIP_VALUES].t;
    if (ni == 0 || !modes || gx_tensor_dtype(modes) != GX_U8 || gx_tensor_ndim(modes) != 1 ||
        gx_tensor_numel(modes) != (int64_t)ni || !splits || gx_tensor_ndim(splits) != 1 ||
        gx_tensor_numel(splits) != (int64_t)ni || a[GX_TREE5_NODES_TRUENODEIDS].n != ni ||
        a[GX_TREE5_NODES_FALSENODEIDS].n != ni || a[GX_TREE5_NODES_TRUELEAFS].n != ni ||
        a[GX_TREE5_NODES_FALSELEAFS].n != ni ||
        (a[GX_TREE5_NODES_MISSING_VALUE_TRACKS_TRUE].n != 0 &&
         a[GX_TREE5_NODES_MISSING_VALUE_TRACKS_TRUE].n != ni))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: the nodes_ attributes must all have one entry an interior node "
                             "(%zu nodes_featureids; nodes_modes uint8)",
                             op, ni);
    if (nl == 0 || !lw || gx_tensor_ndim(lw) != 1 || gx_tensor_numel(lw) != (int64_t)nl)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: leaf_targetids and leaf_weights must have one entry a leaf "
                             "(%zu leaf_targetids)",
                             op, nl);
    if (gx_tensor_dtype(splits) != x->dtype || gx_tensor_dtype(lw) != x->dtype ||
        (mv && (gx_tensor_dtype(mv) != x->dtype || gx_tensor_ndim(mv) != 1)))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: nodes_splits, leaf_weights and membership_values must be 1-D "
                             "%s like the input",
                             op, gx_dtype_name(x->dtype));
    if (a[GX_TREE5_TREE_ROOTS].n == 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: no tree_roots", op);
    for (size_t i = 0; i < nl; i++)
        if (a[GX_TREE5_LEAF_TARGETIDS].ints[i] < 0 || a[GX_TREE5_LEAF_TARGETIDS].ints[i] >= e)
            return gx_infer_errf(ic, GX_EATTR, "%s: leaf %zu is for target %lld of %lld", op, i,
                                 (long long)a[GX_TREE5_LEAF_TARGETIDS].ints[i], (long long)e);
    const uint8_t *md = gx_tensor_cdata(modes);
    const int64_t nm = mv ? gx_tensor_numel(mv) : 0;
    int64_t at = 0; /* the next set's start in membership_values */
    for (size_t i = 0; i < ni; i++) {
        const int64_t f = a[GX_TREE5_NODES_FEATUREIDS].ints[i];
        if (md[i] > 6)
            return gx_infer_errf(ic, GX_EATTR, "%s: node %zu has mode %d (0-6)", op, i, md[i]);
        if (f < 0 || f >= c)
            return gx_infer_errf(ic, GX_EATTR,
                                 "%s: node %zu tests feature %lld; the input has %lld columns",
                                 op, i, (long long)f, (long long)c);
        if (!s_child_ok(a[GX_TREE5_NODES_TRUENODEIDS].ints[i], a[GX_TREE5_NODES_TRUELEAFS].ints[i],
                        (int64_t)ni, (int64_t)nl) ||
            !s_child_ok(a[GX_TREE5_NODES_FALSENODEIDS].ints[i],
                        a[GX_TREE5_NODES_FALSELEAFS].ints[i], (int64_t)ni, (int64_t)nl))
            return gx_infer_errf(ic, GX_EATTR,
                                 "%s: node %zu has a child out of range (%zu interior nodes, "
                                 "%zu leaves; the *leafs flags 0 or 1)",
                                 op, i, ni, nl);
        if (md[i] == 6) {
            int64_t m = 0;
            while (at + m < nm && !isnan(s_tensor_num(mv, at + m)))
                m++;
            if (m == 0)
                return gx_infer_errf(ic, GX_EATTR,
                                     "%s: node %zu is BRANCH_MEMBER but its set in "
                                     "membership_values is empty or missing",
                                     op, i);
            at += m + 1;
        }
    }
    for (size_t i = 0; i < a[GX_TREE5_TREE_ROOTS].n; i++) {
        const int64_t r = a[GX_TREE5_TREE_ROOTS].ints[i];
        if (r < 0 || r >= (int64_t)ni || (gx_tree5_root_is_leaf(a, r) && r >= (int64_t)nl))
            return gx_infer_errf(ic, GX_EATTR,
                                 "%s: tree_roots[%zu] is %lld; %zu interior nodes, %zu leaves",
                                 op, i, (long long)r, ni, nl);
    }
    gx_view_set(&ic->out[0], x->dtype, 2, (int64_t[]){n, e});
    return GX_OK;
}

const gx_op_schema gx_schema_TREE_ENSEMBLE = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_tree5_attrs,
    .n_attrs = GX_TREE5_NATTRS, .infer = s_infer_tree5, .cost = s_cost_tree5,
    .scratch = s_tree5_scratch, .batch = s_batch_rows,
};

/* ---- SVMRegressor / SVMClassifier ---- */

#define S_SVM_ATTRS                                                                           \
    [GX_SVM_COEFFICIENTS] = {.name = "coefficients", .type = GX_ATTR_FLOATS},                 \
    [GX_SVM_KERNEL_PARAMS] = {.name = "kernel_params", .type = GX_ATTR_FLOATS},               \
    [GX_SVM_KERNEL_TYPE] = {.name = "kernel_type", .type = GX_ATTR_STRING, .def_s = "LINEAR"}, \
    [GX_SVM_POST_TRANSFORM] = {.name = "post_transform", .type = GX_ATTR_STRING,              \
                               .def_s = "NONE"},                                              \
    [GX_SVM_RHO] = {.name = "rho", .type = GX_ATTR_FLOATS},                                   \
    [GX_SVM_SUPPORT_VECTORS] = {.name = "support_vectors", .type = GX_ATTR_FLOATS}

static const gx_attr_spec s_svmr_attrs[] = {
    S_SVM_ATTRS,
    [GX_SVMR_N_SUPPORTS] = {.name = "n_supports", .type = GX_ATTR_INT},
    [GX_SVMR_ONE_CLASS] = {.name = "one_class", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_svmr_attrs / sizeof s_svmr_attrs[0] == GX_SVMR_NATTRS,
               "SVMRegressor attrs");

static const gx_attr_spec s_svmc_attrs[] = {
    S_SVM_ATTRS,
    [GX_SVMC_CLASSLABELS_INTS] = {.name = "classlabels_ints", .type = GX_ATTR_INTS},
    [GX_SVMC_CLASSLABELS_STRINGS] = {.name = "classlabels_strings", .type = GX_ATTR_TENSOR},
    [GX_SVMC_PROB_A] = {.name = "prob_a", .type = GX_ATTR_FLOATS},
    [GX_SVMC_PROB_B] = {.name = "prob_b", .type = GX_ATTR_FLOATS},
    [GX_SVMC_VECTORS_PER_CLASS] = {.name = "vectors_per_class", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_svmc_attrs / sizeof s_svmc_attrs[0] == GX_SVMC_NATTRS,
               "SVMClassifier attrs");

static const char *const s_kernels[] = {
    [GX_SVM_LINEAR] = "LINEAR", [GX_SVM_POLY] = "POLY", [GX_SVM_RBF] = "RBF",
    [GX_SVM_SIGMOID] = "SIGMOID",
};

int gx_svm_kernel(const char *s)
{
    for (int i = 0; i < (int)(sizeof s_kernels / sizeof s_kernels[0]); i++)
        if (strcmp(s, s_kernels[i]) == 0)
            return i;
    return -1;
}

/* kernel_type, kernel_params (none or gamma, coef0, degree), post_transform,
 * at most 4096 columns (a row is read as float32 on the kernel's stack). */
static int s_svm_common(gx_infer *ic, const char *op, int64_t c)
{
    const gx_attrval *a = ic->attr;
    if (c > 4096)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: %lld columns; at most 4096", op,
                             (long long)c);
    if (gx_svm_kernel(a[GX_SVM_KERNEL_TYPE].s) < 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: kernel_type \"%s\" is not LINEAR, POLY, RBF or SIGMOID", op,
                             a[GX_SVM_KERNEL_TYPE].s);
    if (a[GX_SVM_KERNEL_PARAMS].n != 0 && a[GX_SVM_KERNEL_PARAMS].n != 3)
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: %zu kernel_params; none or 3 (gamma, coef0, degree)", op,
                             a[GX_SVM_KERNEL_PARAMS].n);
    if (a[GX_SVM_COEFFICIENTS].n == 0 || a[GX_SVM_RHO].n == 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: coefficients and rho needed", op);
    return s_transform_attr(ic, op, GX_SVM_POST_TRANSFORM);
}

static gx_cost s_cost_svm(const gx_infer *ic)
{
    const double rows = ic->in[0].ndim == 2 ? (double)ic->in[0].shape[0] : 1;
    const double w = (double)(ic->attr[GX_SVM_SUPPORT_VECTORS].n + ic->attr[GX_SVM_COEFFICIENTS].n);
    return (gx_cost){.flops = rows * 3 * w, .bytes = gx_infer_io_bytes(ic)};
}

static int s_infer_svmr(gx_infer *ic)
{
    const char *op = "SVMRegressor";
    const gx_attrval *a = ic->attr;
    int64_t n, c;
    int rc = s_rows(ic, op, &n, &c);
    if (rc < 0 || (rc = s_svm_common(ic, op, c)) < 0)
        return rc;
    const int64_t v = a[GX_SVMR_N_SUPPORTS].i;
    const int64_t nsv = (int64_t)a[GX_SVM_SUPPORT_VECTORS].n, nco = (int64_t)a[GX_SVM_COEFFICIENTS].n;
    if (v < 0 || (v > 0 && (nsv != v * c || nco != v)) || (v == 0 && nco != c))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: n_supports %lld with %lld support_vectors values and %lld "
                             "coefficients for %lld columns (n_supports x columns and n_supports, "
                             "or no support vectors and a coefficient a column)",
                             op, (long long)v, (long long)nsv, (long long)nco, (long long)c);
    gx_view_set(&ic->out[0], GX_F32, 2, (int64_t[]){n, 1});
    return GX_OK;
}

const gx_op_schema gx_schema_SVM_REGRESSOR = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_svmr_attrs,
    .n_attrs = GX_SVMR_NATTRS, .infer = s_infer_svmr, .cost = s_cost_svm,
    .batch = s_batch_rows,
};

void gx_svm_sizes(const gx_attrval *a, int64_t *classes, int64_t *vectors, int64_t *features)
{
    const gx_tensor *ls = a[GX_SVMC_CLASSLABELS_STRINGS].t;
    *classes = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_SVMC_CLASSLABELS_INTS].n;
    *vectors = 0;
    for (size_t i = 0; i < a[GX_SVMC_VECTORS_PER_CLASS].n; i++)
        *vectors += a[GX_SVMC_VECTORS_PER_CLASS].ints[i];
    *features = *vectors > 0 ? (int64_t)a[GX_SVM_SUPPORT_VECTORS].n / *vectors
                             : (int64_t)a[GX_SVM_COEFFICIENTS].n / (*classes ? *classes : 1);
}

/* The score columns: one a class, but with support vectors and no
 * prob_a one a pair of classes (2 for two classes), as ONNX Runtime. */
static int64_t s_svmc_cols(const gx_attrval *a, int64_t k, int64_t v)
{
    if (v > 0 && a[GX_SVMC_PROB_A].n == 0)
        return k > 2 ? k * (k - 1) / 2 : 2;
    return k;
}

/* A row's working memory: kernels, pair scores, votes, the pairwise
 * probabilities and the coupling's Q, Qp and p (ONNX Runtime's). */
static size_t s_svmc_scratch(const gx_infer *ic)
{
    int64_t k, v, f;
    gx_svm_sizes(ic->attr, &k, &v, &f);
    const int64_t pairs = k * (k - 1) / 2;
    return (size_t)(k > pairs ? k : pairs) * sizeof(double) +
           (size_t)(v + pairs + 2 * k * k + 2 * k) * sizeof(float) + (size_t)k * sizeof(int64_t) +
           64;
}

static int s_infer_svmc(gx_infer *ic)
{
    const char *op = "SVMClassifier";
    const gx_attrval *a = ic->attr;
    int64_t n, c;
    int rc = s_rows(ic, op, &n, &c);
    if (rc < 0 || (rc = s_svm_common(ic, op, c)) < 0)
        return rc;
    const gx_tensor *ls = a[GX_SVMC_CLASSLABELS_STRINGS].t;
    if (!s_strings_ok(ls))
        return gx_infer_errf(ic, GX_EATTR, "%s: classlabels_strings must be strings", op);
    const int64_t k = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_SVMC_CLASSLABELS_INTS].n;
    if (k < 2 || k > 4096 || (ls && a[GX_SVMC_CLASSLABELS_INTS].n))
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: 2 to 4096 class labels needed, in classlabels_ints or "
                             "classlabels_strings (%lld given)",
                             op, (long long)k);
    const size_t na = a[GX_SVMC_PROB_A].n, pairs = (size_t)(k * (k - 1) / 2);
    if (na != a[GX_SVMC_PROB_B].n)
        return gx_infer_errf(ic, GX_EATTR, "%s: %zu prob_a but %zu prob_b", op, na,
                             a[GX_SVMC_PROB_B].n);
    int64_t v = 0;
    for (size_t i = 0; i < a[GX_SVMC_VECTORS_PER_CLASS].n; i++) {
        const int64_t m = a[GX_SVMC_VECTORS_PER_CLASS].ints[i];
        if (m < 0 || m > ((int64_t)1 << 24) || (v += m) > ((int64_t)1 << 24))
            return gx_infer_errf(ic, GX_EATTR, "%s: vectors_per_class[%zu] is %lld", op, i,
                                 (long long)m);
    }
    const int64_t nsv = (int64_t)a[GX_SVM_SUPPORT_VECTORS].n, nco = (int64_t)a[GX_SVM_COEFFICIENTS].n;
    if (v > 0) {
        if ((int64_t)a[GX_SVMC_VECTORS_PER_CLASS].n != k || nsv != v * c ||
            nco != (k - 1) * v || a[GX_SVM_RHO].n < pairs || (na != 0 && na < pairs))
            return gx_infer_errf(ic, GX_EATTR,
                                 "%s: %lld classes and %lld support vectors of %lld columns need "
                                 "vectors_per_class a class (%zu given), %lld support_vectors "
                                 "values (%lld), %lld coefficients (%lld), %zu rho (%zu) and "
                                 "none or %zu prob_a, prob_b (%zu)",
                                 op, (long long)k, (long long)v, (long long)c,
                                 a[GX_SVMC_VECTORS_PER_CLASS].n, (long long)(v * c),
                                 (long long)nsv, (long long)((k - 1) * v), (long long)nco, pairs,
                                 a[GX_SVM_RHO].n, pairs, na);
    } else if (nco != k * c) {
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: without support vectors %lld classes of %lld columns need %lld "
                             "coefficients (%lld given)",
                             op, (long long)k, (long long)c, (long long)(k * c), (long long)nco);
    }
    gx_view_set(&ic->out[0], ls ? GX_STRING : GX_I64, 1, &n);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_F32, 2, (int64_t[]){n, s_svmc_cols(a, k, v)});
    return GX_OK;
}

const gx_op_schema gx_schema_SVM_CLASSIFIER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2, .attrs = s_svmc_attrs,
    .n_attrs = GX_SVMC_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_svmc,
    .cost = s_cost_svm, .scratch = s_svmc_scratch, .shares = s_one_share,
    .batch = s_batch_rows,
};

/* ---- CategoryMapper ---- */

static const gx_attr_spec s_catmap_attrs[] = {
    [GX_CATMAP_CATS_INT64S] = {.name = "cats_int64s", .type = GX_ATTR_INTS},
    [GX_CATMAP_CATS_STRINGS] = {.name = "cats_strings", .type = GX_ATTR_TENSOR},
    [GX_CATMAP_DEFAULT_INT64] = {.name = "default_int64", .type = GX_ATTR_INT, .def_i = -1},
    [GX_CATMAP_DEFAULT_STRING] = {.name = "default_string", .type = GX_ATTR_STRING,
                                  .def_s = "_Unused"},
};
_Static_assert(sizeof s_catmap_attrs / sizeof s_catmap_attrs[0] == GX_CATMAP_NATTRS,
               "CategoryMapper attrs");

static int s_infer_catmap(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const gx_attrval *a = ic->attr;
    const gx_tensor *cs = a[GX_CATMAP_CATS_STRINGS].t;
    if (x->kind != GX_KIND_TENSOR || (x->dtype != GX_STRING && x->dtype != GX_I64))
        return gx_infer_errf(ic, GX_EDTYPE, "CategoryMapper: input is %s; strings or int64 needed",
                             gx_dtype_name(x->dtype));
    if (!cs || !s_strings_ok(cs) || gx_tensor_numel(cs) != (int64_t)a[GX_CATMAP_CATS_INT64S].n)
        return gx_infer_errf(ic, GX_EATTR,
                             "CategoryMapper: cats_strings and cats_int64s must be lists of the "
                             "same length (%lld and %zu given)",
                             cs ? (long long)gx_tensor_numel(cs) : 0LL,
                             a[GX_CATMAP_CATS_INT64S].n);
    gx_view_set(&ic->out[0], x->dtype == GX_STRING ? GX_I64 : GX_STRING, x->ndim, x->shape);
    return GX_OK;
}

const gx_op_schema gx_schema_CATEGORY_MAPPER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_catmap_attrs,
    .n_attrs = GX_CATMAP_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_catmap,
    .cost = s_cost_io, .batch = s_batch_same,
};
